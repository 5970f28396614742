#!/usr/bin/env python3
"""Summarises an H200 report JSON too large to commit whole (reports/h200/gate.json, fuzz_summary.json).

Every gate result, and every failure of a fuzz summary (with its shrunk case), keeps its top-level
fields: kernel, mechanism, dtype, shape, seed, knobs, origin, pass, errors, the figures of output `o`,
the grades, the reproduce command. What goes is the per-output breakdown (`outputs`), which the readers
of the committed files (`larc report --h200-gate`, `larc gate --verify-report`) do not use; the full
file is the one the run wrote, kept in its everything.tar.gz, and reproducible by the command recorded
under "summarised" (tools/h200/kernels_run.sh on an H200, from the tree named by "tree_hash").
Usage: slim_report.py FULL.json --out OUT.json --command "tools/h200/kernels_run.sh gate"
"""
import argparse
import json


def slim_case(case):
    out = {k: v for k, v in case.items() if k != "outputs"}
    if isinstance(out.get("shrunk"), dict):
        out["shrunk"] = slim_case(out["shrunk"])
    return out


def slim(report, command):
    out = dict(report)
    key = "results" if "results" in report else "failures"
    out[key] = [slim_case(c) for c in report[key]]
    out["summarised"] = {
        "dropped": f"{key}[].outputs (the per-output figures)",
        "full_report": command,
    }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("full")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True, help="the command that writes the full report")
    a = ap.parse_args()
    with open(a.full) as f:
        report = json.load(f)
    with open(a.out, "w") as f:
        f.write(dumps_one_case_a_line(slim(report, a.command)))


def dumps_one_case_a_line(report):
    """JSON with one line per top-level field and per case: small, and a diff shows the cases that changed."""
    compact = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    lines = []
    for key, value in report.items():
        if isinstance(value, list) and value and all(isinstance(c, dict) for c in value):
            body = ",\n".join("  " + compact(c) for c in value)
            lines.append(f" {compact(key)}: [\n{body}\n ]")
        else:
            lines.append(f" {compact(key)}: {compact(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


if __name__ == "__main__":
    main()
