"""Joins the gate reports of one H200 run (one JSON per group of shapes, written by `larc gate --json`)
into reports/h200/gate.json and gate.md. Every part must carry the same tree hash and tolerance policy (the
"policy" `larc gate` records; older reports have none); the joined report keeps both, so
`larc gate --verify-report reports/h200/gate.json` can tell whether it is current.

gate.md: per (kernel, mechanism, dtype) the cases, failures, worst error/tolerance ratio and the
largest relative error against the oracle, then every failure with its reproduce command.
"""
import argparse
import json
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("parts", nargs="+")
    ap.add_argument("--json", required=True)
    ap.add_argument("--markdown", required=True)
    ap.add_argument("--device", help="the card the run used (nvidia-smi's name), named in gate.md's title")
    a = ap.parse_args()
    results, hashes, policies, sources = [], set(), set(), []
    for path in a.parts:
        with open(path) as f:
            part = json.load(f)
        hashes.add(part["tree_hash"])
        policies.add(json.dumps(part.get("policy"), sort_keys=True))
        results += part["results"]
        sources.append(f"{path.split('/')[-1]} ({len(part['results'])} cases)")
    if len(hashes) != 1:
        raise SystemExit(f"parts made from different trees: {sorted(hashes)}")
    if len(policies) != 1:
        raise SystemExit(f"parts judged under different tolerance policies: {sorted(policies)}")
    tree, policy = hashes.pop(), json.loads(policies.pop())
    joined = {"tree_hash": tree, "shard": "0/1", "parts": sources, "results": results}
    if policy is not None:
        joined["policy"] = policy
    with open(a.json, "w") as f:
        json.dump(joined, f, indent=1)

    groups = defaultdict(list)
    for r in results:
        groups[(r["kernel"], r["mechanism"], r["dtype"])].append(r)
    failed = [r for r in results if not r["pass"]]
    md = [f"# larc gate on the {a.device}\n" if a.device else "# larc gate\n",
          f"Source tree (reference/ + gpu/): `{tree}`. {len(results)} cases, {len(failed)} failed. "
          f"Parts: {', '.join(sources)}. Ratio = the worst error/tolerance over timesteps and windows "
          "(pass ≤ 1; docs/gate.md).\n",
          "| kernel | mechanism | dtype | cases | failed | worst ratio | largest rel. error | largest ULPs |",
          "|---|---|---|---|---|---|---|---|"]
    for (kernel, mech, dtype), rs in sorted(groups.items()):
        ratio = max((r.get("worst_ratio") or 0) for r in rs)
        rel = max((r.get("max_rel_err") or 0) for r in rs)
        ulps = max((r.get("max_ulps") or 0) for r in rs)
        md.append(f"| {kernel} | {mech} | {dtype} | {len(rs)} | {sum(not r['pass'] for r in rs)} | {ratio:.3g} | "
                  f"{rel:.3g} | {ulps:.3g} |")
    if failed:
        md.append("\n## Failures\n")
        for r in failed:
            md.append(f"- {r['kernel']} ({r['mechanism']}) {r['dtype']} [{r['shape']}] {r['origin']}: "
                      f"{'; '.join(r['errors'])[:400]}  \n  `{r['reproduce']}`")
    with open(a.markdown, "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md[:4 + len(groups)]))


if __name__ == "__main__":
    main()
