#!/usr/bin/env python3
"""Summary of a merged `larc merge` fuzz report too large to commit (one row per case).

Writes, from the merged JSON: a Markdown summary (per kernel and dtype: cases, failures, error/tolerance
quantiles; failures by sequence length and by how far past the tolerance; the worst failures with their
reproduce commands) and a JSON file holding the campaign header, those tables and every failing case in
full. Usage: fuzz_summary.py MERGED.json --markdown OUT.md --json OUT.json
"""
import argparse
import collections
import json


def quantile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def length_bucket(shape):
    t = int(shape.split(",")[1])
    return "T = 1" if t == 1 else "T ≤ 64" if t <= 64 else "T > 64"


def excess_bucket(ratio):
    for bound in (1.25, 1.5, 2.0, 4.0):
        if ratio <= bound:
            return f"≤ {bound}×"
    return "> 4×"


def ratio_of(case):
    """A case's worst ratio; a case without one (failed by a criterion that has no ratio, such as a
    non-finite baseline, or skipped) counts as infinite when failed and as 0 otherwise."""
    r = case.get("worst_ratio")
    return r if r is not None else (0.0 if case["pass"] else float("inf"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("merged")
    ap.add_argument("--markdown", required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    with open(a.merged) as f:
        report = json.load(f)
    results = report["results"]
    ratios = collections.defaultdict(list)
    failures = [r for r in results if not r["pass"]]
    for r in results:
        ratios[(r["kernel"], r["dtype"])].append(ratio_of(r))
    table = []
    for (kernel, dtype), values in sorted(ratios.items()):
        values.sort()
        failed = sum(1 for r in failures if r["kernel"] == kernel and r["dtype"] == dtype)
        table.append({"kernel": kernel, "dtype": dtype, "cases": len(values), "failed": failed,
                      "p50": quantile(values, 0.5), "p99": quantile(values, 0.99),
                      "p999": quantile(values, 0.999), "max": values[-1]})
    by_length = collections.Counter((length_bucket(r["shape"]), r["dtype"]) for r in failures)
    cases_by_length = collections.Counter((length_bucket(r["shape"]), r["dtype"]) for r in results)
    by_excess = collections.Counter(excess_bucket(ratio_of(r)) for r in failures)
    worst = sorted(failures, key=lambda r: -ratio_of(r))[:20]

    out = {"tree_hash": report.get("tree_hash"), "campaign": report.get("campaign"), "summary": report.get("summary"),
           "per_kernel_dtype": table,
           "failures_by_length": [{"length": l, "dtype": d, "failed": n, "cases": cases_by_length[(l, d)]}
                                  for (l, d), n in sorted(by_length.items())],
           "failures_by_excess": dict(sorted(by_excess.items())), "failures": failures}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)

    s = report.get("summary", {})
    lines = ["# larc fuzz over the GPU kernels on two H200s: summary", "",
             f"Source tree (reference/ + gpu/): `{report.get('tree_hash')}`. Campaign: "
             f"`{json.dumps(report.get('campaign'), sort_keys=True)}`. {len(results)} cases, {len(failures)} failed "
             f"({100 * len(failures) / max(1, len(results)):.2f}%). Merged summary: `{json.dumps(s, sort_keys=True)}`.",
             "", "Error/tolerance is the gate's worst ratio per case (≤ 1 passes; docs/gate.md).", "",
             "| kernel | dtype | cases | failed | p50 | p99 | p99.9 | max |", "|---|---|---|---|---|---|---|---|"]
    for row in table:
        lines.append(f"| {row['kernel']} | {row['dtype']} | {row['cases']} | {row['failed']} | {row['p50']:.3g} | "
                     f"{row['p99']:.3g} | {row['p999']:.3g} | {row['max']:.3g} |")
    lines += ["", "## Failures by sequence length", "", "| length | dtype | failed | cases | rate |", "|---|---|---|---|---|"]
    for (l, d), n in sorted(by_length.items()):
        c = cases_by_length[(l, d)]
        lines.append(f"| {l} | {d} | {n} | {c} | {100 * n / c:.2f}% |")
    lines += ["", "## Failures by how far past the tolerance", "", "| error/tolerance | failed |", "|---|---|"]
    lines += [f"| {k} | {n} |" for k, n in sorted(by_excess.items())]
    lines += ["", "## The 20 worst failures", ""]
    for r in worst:
        lines.append(f"- {r['kernel']} {r['dtype']} shape {r['shape']}: {ratio_of(r):.3g}× "
                     f"({(r.get('errors') or [''])[0]})  \n  `{r['reproduce']}`")
    with open(a.markdown, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[:6 + len(table) + 4 + len(by_length) + 4 + len(by_excess)]))


if __name__ == "__main__":
    main()
