#!/usr/bin/env python3
"""Whether two larc builds would give the same verdicts on a set of fixtures: a report from one source tree
carried over to another without rerunning the kernel it judged (reports/h200/fifth_looks/README.md, grad_io/).

For each `larc fixtures gen ...` command in COMMANDS (one a line, as kernels_run.sh's fixtures.txt records them):
- both builds generate the fixture; the two files must be byte for byte the same (inputs and oracle);
- two fixed candidates are made from its oracle outputs, times (1 + eps u) with u uniform in [-1, 1] from a fixed
  seed, at eps = 3e-3 and 3e-4 (so some outputs fail and some pass), stored as float32;
- both builds judge each candidate with `larc diff` at each --grade given; their JSON (every figure at full
  precision, every output's verdict, grade met, baselines) and their text must be the same, but for the source
  tree hash and the seconds.
A kernel's outputs depend only on the fixture's inputs, so where all of this holds the two builds judge any
candidate on these fixtures alike. Exit 0 when everything is the same, 1 otherwise (each difference named).

Usage: same_judgement.py --larc-a A/larc --larc-b B/larc --commands fixtures.txt [--grade io:tf32-truncated ...]
"""
import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import safetensors_file

EPSILONS = (3e-3, 3e-4)


def perturbed_candidate(fixture, out, eps):
    tensors, _ = safetensors_file.read(fixture)
    rng = np.random.default_rng(7)
    oracle = {name.removeprefix("oracle."): x for name, x in sorted(tensors.items()) if name.startswith("oracle.")}
    safetensors_file.write(out, {name: x * (1 + eps * rng.uniform(-1, 1, x.shape)) for name, x in oracle.items()})


def without_provenance(x):
    if isinstance(x, dict):
        return {k: without_provenance(v) for k, v in x.items() if k not in ("seconds", "tree_hash")}
    if isinstance(x, list):
        return [without_provenance(v) for v in x]
    return x


def judge(larc, fixture, candidate, grade, json_path):
    json_path.unlink(missing_ok=True)  # no earlier judgement's report read as this one's
    run = subprocess.run([larc, "diff", str(fixture), str(candidate), "--grade", grade, "--json", str(json_path)],
                         capture_output=True, text=True)
    verdict = json.loads(json_path.read_text()) if json_path.exists() else None
    return run.returncode, run.stdout + run.stderr, verdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--larc-a", required=True)
    ap.add_argument("--larc-b", required=True)
    ap.add_argument("--commands", required=True, help="larc fixtures gen commands, one a line")
    ap.add_argument("--grade", action="append", help="grades to judge at (default: io:tf32-truncated and fp32)")
    a = ap.parse_args()
    grades = a.grade or ["io:tf32-truncated", "fp32"]
    for option, path in (("--larc-a", a.larc_a), ("--larc-b", a.larc_b)):
        if not Path(path).is_file():
            raise SystemExit(f"same_judgement: {option} {path}: no such program")
    a.larc_a, a.larc_b = str(Path(a.larc_a).resolve()), str(Path(a.larc_b).resolve())
    commands = sorted({l.strip() for l in Path(a.commands).read_text().splitlines() if l.strip()})
    differences, judged, outputs, passed = [], 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for side in ("a", "b"):
            (tmp / side).mkdir()
        for command in commands:
            args = shlex.split(command)
            if args[:3] != ["larc", "fixtures", "gen"]:
                raise SystemExit(f"same_judgement: not a larc fixtures gen command: {command}")
            name = Path(args[args.index("--out") + 1]).name
            for side, larc in (("a", a.larc_a), ("b", a.larc_b)):
                subprocess.run([larc, *args[1:]], cwd=tmp / side, check=True, capture_output=True)
            fa, fb = tmp / "a" / name, tmp / "b" / name
            if fa.read_bytes() != fb.read_bytes():
                differences.append(f"{name}: the fixtures differ")
                continue
            for eps in EPSILONS:
                candidate = tmp / f"{name}.{eps:g}.candidate.safetensors"
                perturbed_candidate(fa, candidate, eps)
                for grade in grades:
                    ra = judge(a.larc_a, fa, candidate, grade, tmp / "a.json")
                    rb = judge(a.larc_b, fa, candidate, grade, tmp / "b.json")
                    judged += 1
                    if ra[0] != rb[0] or ra[1] != rb[1] or without_provenance(ra[2]) != without_provenance(rb[2]):
                        differences.append(f"{name}, eps {eps:g}, grade {grade}: the judgements differ")
                    for r in (ra[2] or {}).get("results", []):
                        outputs += len(r["outputs"])
                        passed += sum(o["pass"] for o in r["outputs"])
    print(f"{len(commands)} fixtures, {judged} judgements ({outputs} output verdicts, {passed} pass) by each build")
    for d in differences:
        print("DIFFERENT:", d)
    print("the same" if not differences else f"{len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
