"""Joins the gate's and larc diff's JSON reports on the same fixtures (tools/h200/kernels_run.sh accuracy)
into one Markdown table: per fixture (dtype) and kernel, the output's relative L2 error against the
float64-certified oracle (rel_rms), its worst error/tolerance ratio and the verdict, plus the
baseline (the float reference in the input dtype) every kernel is judged beside.
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--markdown", required=True)
    a = ap.parse_args()
    rows, tree = [], None
    for path in a.reports:
        with open(path) as f:
            report = json.load(f)
        tree = tree or report.get("tree_hash")
        for r in report["results"]:
            out = {o["output"]: o for o in r["outputs"]}
            o = out.get("o", {})
            rows.append((r["dtype"], r["shape"], r["kernel"], o.get("rel_rms"), o.get("baseline_rel_rms"),
                         o.get("worst_ratio"), r["pass"]))
    md = ["# GDN accuracy on the same inputs: larc's kernels and FLA's (H200)\n",
          f"Source tree (reference/ + gpu/): `{tree}`. Fixtures: `larc fixtures gen --mechanism gdn --dtype D "
          "--shape 1,4096,4,128,128 --seed 11` (FLA's layout; float64-certified oracle). FLA's outputs judged by "
          "`larc diff`, larc's by `larc gate --fixtures` (tools/h200/kernels_run.sh accuracy). rel L2 = "
          "‖o − oracle‖ / ‖oracle‖; baseline = the reference recurrence run in the input dtype.\n",
          "| dtype | kernel | rel L2 error of o | baseline rel L2 | worst error / tolerance | verdict |",
          "|---|---|---|---|---|---|"]
    fmt = lambda x: "" if x is None else f"{x:.3g}"
    for dt, _, kernel, rel, base, worst, ok in sorted(rows, key=lambda r: (r[0], r[2])):
        md.append(f"| {dt} | {kernel} | {fmt(rel)} | {fmt(base)} | {fmt(worst)} | {'pass' if ok else 'FAIL'} |")
    with open(a.markdown, "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
