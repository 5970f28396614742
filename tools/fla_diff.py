#!/usr/bin/env python3
"""Runs flash-linear-attention's kernels on larc fixtures and judges their outputs in-process with the larc package.

For every larc fixture given (files or folders of *.safetensors) whose mechanism FLA implements
(chunk_gated_delta_rule and fused_recurrent_gated_delta_rule for "gdn", chunk_log_linear_attn for
log-linear attention; chunk_gated_delta_rule and chunk_delta_rule with use_qk_l2norm_in_kernel=True,
larc.fla's *_qk_l2norm, for "gdn-qk-l2norm" and "deltanet-qk-l2norm": raw q and k), this runs each FLA
function through larc.fla's callables on the fixture's case (larc.Case.from_fixture: its inputs as torch
tensors of the fixture's dtype on --device, its initial state when it has one, its read scale) and
judges it as larc.gate does (Case.run, docs/python.md): two runs that must be bitwise equal, inputs left
untouched, the first run's outputs judged against the fixture's oracle at the grade --grade declares
(fp32 for a mechanism without an io form, as the log-linear and HLA gradient twins), larc reporting the
strictest grade each output meets. On a gradient fixture (mechanism
"<forward>-backward": gdn, deltanet, gla and the two qk-l2norm mechanisms) the callable is FLA's forward
and Case.run takes torch.autograd.grad of L = sum(do * o) + sum(dht * final_state) with the fixture's do
and dht, i.e. FLA's backward, judged on the gradients under the twin's names (a zero initial state where
the fixture has none, so that dh0 is the gradient there, as the twin defines it). A backward FLA refuses
(it raises) is reported as "refused" with FLA's message, not as an error.

Every judged run's outputs are written as OUT/<fixture>.<function>.safetensors, with metadata naming the
FLA, torch and Triton versions and the GPU: the candidate `larc diff FIXTURE CANDIDATE` judges again
(tools/h200/kernels_run.sh accuracy reads them). A failure is also saved as the package saves one, under
OUT/failures (the fixture, the candidate and the `larc diff` command replaying the verdict, printed with
the program --larc names). --report writes a Markdown summary with every output's grade.

The native library (liblarc.so) is $LARC_LIBRARY, else this checkout's build/python/larc/liblarc.so.
Needs torch with CUDA, fla-core and einops (pip install --no-deps the wheels in .wheels/). Exit codes as
larc's: 0 every output passed, 1 a violation, 2 an error (a bad fixture, FLA failed). The last line
printed is the summary.
"""
import argparse
import os
import sys
from pathlib import Path

# The larc package of this checkout (python/); its native library from $LARC_LIBRARY, else this
# checkout's build.
CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT / "python"))
if not os.environ.get("LARC_LIBRARY") and (CHECKOUT / "build/python/larc/liblarc.so").exists():
    os.environ["LARC_LIBRARY"] = str(CHECKOUT / "build/python/larc/liblarc.so")
import larc  # noqa: E402
from larc import fla as larc_fla  # noqa: E402

# FLA's functions for each larc mechanism.
FLA_FUNCTIONS_OF_MECHANISM = {
    "gdn": ["chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule"],
    "log-linear": ["chunk_log_linear_attn"],
    "gdn-qk-l2norm": ["chunk_gated_delta_rule_qk_l2norm"],
    "deltanet-qk-l2norm": ["chunk_delta_rule_qk_l2norm"],
}
# FLA's functions whose backward is run on a gradient fixture, for each forward mechanism.
FLA_BACKWARD_OF_MECHANISM = {
    "gdn": ["chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule"],
    "deltanet": ["chunk_delta_rule", "fused_recurrent_delta_rule"],
    "gla": ["chunk_gla", "fused_recurrent_gla"],
    "gdn-qk-l2norm": ["chunk_gated_delta_rule_qk_l2norm"],
    "deltanet-qk-l2norm": ["chunk_delta_rule_qk_l2norm"],
}
# What FLA's own guards refuse, skipped with FLA's reason rather than reported as errors.
REFUSED_DTYPES = {name: {"fp32": "FLA's chunk_delta_rule does not support float32"}
                  for name in ("chunk_delta_rule", "chunk_delta_rule_qk_l2norm")}
# How Case.run reports a callable whose forward or backward raised (python/larc/_case.py).
FORWARD_RAISED = "the callable raised "
BACKWARD_RAISED = "the callable's backward (torch.autograd.grad) raised "


def functions_of(mechanism):
    """FLA's functions run on a fixture of `mechanism` ([None]: none)."""
    if mechanism and mechanism.endswith("-backward"):
        return FLA_BACKWARD_OF_MECHANISM.get(mechanism.removesuffix("-backward"), [None])
    return FLA_FUNCTIONS_OF_MECHANISM.get(mechanism, [None])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("fixtures", nargs="+", help="larc fixture files or folders of *.safetensors")
    p.add_argument("--out", default="fla_candidates", help="folder for the candidate files (default: fla_candidates)")
    p.add_argument("--larc", default="larc", help="the larc program the replay commands of failures name (default: larc)")
    p.add_argument("--grade", default="fp32", choices=list(larc.GRADES),
                   help="the precision grade FLA's outputs are judged at (default fp32)")
    p.add_argument("--grade-of", action="append", default=[], metavar="OUTPUT=GRADE",
                   help="a grade for one output (repeatable), as larc diff --grade-of")
    p.add_argument("--report", help="write a Markdown summary here")
    p.add_argument("--triton-f32", choices=["ieee", "tf32", "tf32x3"],
                   help="set TRITON_F32_DEFAULT (fp32 dot precision) before FLA loads; unset: Triton's default")
    p.add_argument("--device", default="cuda",
                   help="torch device FLA runs on (default cuda); cpu, or none (numpy arrays), only check this script "
                        "with a stand-in for FLA")
    return p.parse_args()


def fixture_files(paths):
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.safetensors") if not f.name.endswith(".candidate.safetensors"))
        elif p.is_file():
            files.append(p)
        else:
            raise SystemExit(f"fla_diff: {p}: no such file or directory")
    return files


def grade_of(args):
    """--grade-of OUTPUT=GRADE as Case.run's grade_of."""
    out = {}
    for g in args.grade_of:
        output, sep, grade = g.partition("=")
        if not sep:
            raise SystemExit(f"fla_diff: --grade-of {g}: expected OUTPUT=GRADE")
        out[output] = grade
    return out


def skip_reason(case, function):
    """Why FLA's `function` is not run on a case (None: it is)."""
    mechanism, dtype = case.spec["mechanism"], case.spec["dtype"]
    if function is None:
        return f"skipped: no FLA counterpart run here for mechanism {mechanism!r}"
    if dtype == "fp64":
        return "skipped: FLA's Triton kernels take no float64"
    if dtype in REFUSED_DTYPES.get(function, {}):
        return f"skipped: {REFUSED_DTYPES[function][dtype]}"
    K, V = (int(x) for x in case.spec["shape"].split(",")[3:5])
    if function == "chunk_log_linear_attn" and (K % 64 != 0 or V & (V - 1) != 0):
        return f"skipped: chunk_log_linear_attn takes K a multiple of 64 and V a power of two (K={K}, V={V})"
    return None


def judge(path, case, function, args, out_dir, versions):
    """FLA's `function` (its backward on a gradient fixture) on one fixture's case, judged in-process: the
    report's row."""
    row = {"fixture": str(path), "function": function, "note": skip_reason(case, function), "rc": None, "larc": "",
           "result": None}
    if row["note"]:
        return row
    # A mechanism without an io form (a gradient twin without a chunked backward in the reference: log-linear's,
    # HLA's, VLA's, CCQ's, la-ratio's) can only be judged at fp32.
    grade = args.grade if larc.mechanisms()[case.spec["mechanism"]].get("io_form") else "fp32"
    result = case.run(larc_fla.KERNELS[function], device=None if args.device == "none" else args.device,
                      grade=grade, grade_of=grade_of(args), kernel=f"fla.{function}", save_dir=out_dir / "failures",
                      shrink=False)
    raised = [e for e in result.errors if e.startswith((FORWARD_RAISED, BACKWARD_RAISED))]
    if raised and raised[0].startswith(BACKWARD_RAISED):
        row["note"] = f"refused: {function}'s backward raised {raised[0].removeprefix(BACKWARD_RAISED)}"
        return row
    if raised:
        row["note"], row["rc"] = f"error: FLA's {function} raised {raised[0].removeprefix(FORWARD_RAISED)}", 2
        return row
    what = function if not case.is_gradient else f"{function} backward"
    judged = {o["output"] for o in result.json["outputs"]}
    if result.json["outputs"]:
        candidate = out_dir / f"{path.stem}.{function}.safetensors"
        result.write_candidate(candidate, {"fixture": path.name, "fla_function": function, **versions})
        shapes = ", ".join(f"{o['name']} {o['dtype']} {o['shape']}" for o in case.info["outputs"] if o["name"] in judged)
        row["note"] = f"{what}: {shapes}; two runs bitwise {'equal' if result.json['deterministic'] else 'DIFFERENT'}"
    else:  # outputs FLA returned malformed: the errors name them
        row["note"] = f"{what}: " + "; ".join(result.errors)
    row["rc"], row["result"] = (0 if result.passed else 1), result.json
    row["larc"] = result.message().replace("reproduce:   larc diff ", f"reproduce:   {args.larc} diff ")
    return row


def main():
    args = parse_args()
    if args.triton_f32:
        os.environ["TRITON_F32_DEFAULT"] = args.triton_f32
    cuda = args.device.startswith("cuda")
    try:
        torch = __import__("torch") if args.device != "none" else None
        import fla
        triton_version = __import__("triton").__version__ if cuda else "not used"
        for functions in [*FLA_FUNCTIONS_OF_MECHANISM.values(), *FLA_BACKWARD_OF_MECHANISM.values()]:
            for function in functions:  # imported now: a missing one is named here
                larc_fla.function(function)
        larc.mechanisms()  # the native library, loaded now: a missing one is named here
    except ImportError as e:
        print(f"FAIL: {e} (needs torch with CUDA, triton, fla-core, einops: python3 -m pip install --no-deps .wheels/*.whl; "
              "and liblarc.so: $LARC_LIBRARY or this checkout's build)")
        return 2

    if cuda and not torch.cuda.is_available():
        print("FAIL: no CUDA device (FLA's kernels are Triton kernels)")
        return 2
    versions = {"fla_version": getattr(fla, "__version__", "?"), "torch_version": torch.__version__ if torch else "not used",
                "triton_version": triton_version, "device": torch.cuda.get_device_name() if cuda else args.device,
                "triton_f32_default": os.environ.get("TRITON_F32_DEFAULT", "unset")}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    rows, worst = [], 0
    for path in fixture_files(args.fixtures):
        try:
            case = larc.Case.from_fixture(path)
            functions = functions_of(case.spec["mechanism"])
        except ValueError as e:  # not a larc fixture: reported, the others still run
            rows.append({"fixture": str(path), "function": None, "note": f"error: {e}", "rc": 2, "larc": "", "result": None})
            worst = 2
            print(f"{path}: {rows[-1]['note']}", flush=True)
            continue
        for function in functions:
            try:
                row = judge(path, case, function, args, out_dir, versions)
            except Exception as e:  # a fixture FLA cannot be called on is reported, the others still run
                row = {"fixture": str(path), "function": function, "note": f"error: {type(e).__name__}: {e}", "rc": 2,
                       "larc": "", "result": None}
            worst = max(worst, row["rc"] or 0)
            rows.append(row)
            verdict = {None: "", 0: " -> larc: pass", 1: " -> larc: VIOLATION"}.get(row["rc"], "")
            if row["rc"] == 1 and row["result"].get("reproduce"):
                verdict += f"; replay: {args.larc} diff {row['result']['reproduce'].removeprefix('larc diff ')}"
            print(f"{path}: {row['note']}{verdict}", flush=True)
            if args.report:  # after every candidate: a run cut short by a time limit keeps what it judged
                write_report(args.report, rows, versions, " ".join(sys.argv), args.grade)

    if args.report:
        write_report(args.report, rows, versions, " ".join(sys.argv), args.grade)
    ran = [r for r in rows if r["result"] is not None]
    counts = {k: sum(r["rc"] == k for r in ran) for k in (0, 1)}
    errors = sum(r["rc"] == 2 for r in rows)
    refused = sum(r["note"].startswith("refused") for r in rows)
    summary = (f"{len(rows)} fixtures, FLA ran on {len(ran)}" + (f", {refused} backward refused by FLA" if refused else "")
               + f", larc: {counts[0]} pass, {counts[1]} violations, {errors} errors; candidates in {out_dir}")
    print(("PASS: " if worst == 0 else "FAIL: ") + summary)
    return worst


def grade_rows(r):
    """One Markdown row per judged output: grade met, ratio and baseline error at each grade."""
    out = []
    for j in (r["result"] or {}).get("outputs", []):
        grades = j.get("grades", {})
        cells = " | ".join(f"{g}: {v['worst_ratio']:.3g} ({v['baseline_rel_err']:.2g})" for g, v in grades.items())
        out.append(f"| {Path(r['fixture']).name} | {r['function']} | {j['output']} ({j['dtype']}) | {j['max_rel_err']:.3g} | "
                   f"{cells} | **{j['grade_met']}** / {j['grade_declared']} | {'pass' if j['pass'] else '**violation**'} |")
    return out


def write_report(path, rows, versions, command, grade):
    lines = ["# flash-linear-attention vs larc fixtures", "",
             "Made by `" + command + "`.", "",
             ", ".join(f"{k} {v}" for k, v in versions.items()), "",
             "| fixture | FLA run | larc |", "|---|---|---|"]
    for r in rows:
        verdict = {None: "-", 0: "pass", 1: "**violation**"}.get(r["rc"], f"exit {r['rc']}")
        lines.append(f"| {Path(r['fixture']).name} | {r['note']} | {verdict} |")
    lines += ["", f"Per output, judged at the declared grade {grade} (--grade): the max relative error, the "
              "worst error/tolerance ratio at each grade evaluated (with that grade's baseline max relative error) and "
              "the strictest grade met.", "",
              "| fixture | FLA function | output | max rel err | ratio (baseline err) per grade | grade met / declared | verdict |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines += grade_rows(r)
    lines.append("")
    for r in rows:
        if r["larc"]:
            lines += [f"## {Path(r['fixture']).name}: {r['function']}", "", "```", r["larc"], "```", ""]
    Path(path).write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
