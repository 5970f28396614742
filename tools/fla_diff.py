#!/usr/bin/env python3
"""Runs flash-linear-attention's kernels on larc fixtures and writes their outputs for `larc diff`.

For every larc fixture given (files or folders of *.safetensors) whose mechanism FLA implements
(chunk_gated_delta_rule and fused_recurrent_gated_delta_rule for "gdn", chunk_log_linear_attn for
log-linear attention; chunk_gated_delta_rule and chunk_delta_rule with use_qk_l2norm_in_kernel=True,
larc.fla's *_qk_l2norm, for "gdn-qk-l2norm" and "deltanet-qk-l2norm": raw q and k), this loads the fixture's inputs with `safetensors` (PyTorch) onto CUDA in the
fixture's dtype, runs each FLA function twice (the two results must be bitwise equal), passing the
fixture's "initial_state" when it has one, and writes a candidate file OUT/<fixture>.<function>
.safetensors holding "o" (FLA's output dtype) and, where FLA returns one, "final_state" (float32),
with metadata naming the FLA, torch and Triton versions and the GPU. On a gradient fixture (mechanism
"<forward>-backward": gdn, deltanet, gla and the two qk-l2norm mechanisms) it runs FLA's forward functions of that mechanism with
requires_grad inputs and takes torch.autograd.grad of L = sum(do * o) + sum(dht * final_state) with the
fixture's do and dht, i.e. FLA's backward: the candidate holds the gradients under the twin's names (dq,
dk, dv, dg|dgk, dbeta, dh0; without an initial state in the fixture FLA is given a zero one, so that dh0
is the gradient there, as the twin defines it). A backward FLA refuses (it raises) is reported as
"refused" with FLA's message, not as an error. With --larc it then runs
`larc diff FIXTURE CANDIDATE` on each pair (at the precision grade --grade declares; larc reports
the strictest grade each output meets) and writes a Markdown summary (--report).

Fixture layout (harness/include/larc/harness/fixture.h): inputs under the mechanism's input names in
FLA's layout (q, k [B,T,H,K]; v [B,T,H,V]; g log-decays [B,T,H]; beta [B,T,H]; log-linear:
level_scales [B,T,H,L], q and k [B,T,G,K] with G dividing H), oracle outputs "oracle.NAME" (ignored
here), metadata mechanism / dtype / shape / parameters (JSON; "scale" as a number or "K^-1/2";
"fla_function" when the mechanism names its FLA counterpart).

Needs torch with CUDA, fla-core and einops (pip install --no-deps the wheels in .wheels/) and
safetensors. Exit codes as larc's: 0 every diff passed (or no --larc), 1 a diff found a violation,
2 an error (a bad fixture, FLA failed, larc diff exit 2). The last line printed is the summary.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

# FLA's calls are larc's (python/larc/fla.py), imported from this checkout: larc.fla needs neither numpy
# nor the native library.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from larc import autograd as larc_autograd  # noqa: E402
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


def functions_of(mechanism):
    """FLA's functions run on a fixture of `mechanism` ([None]: none)."""
    if mechanism and mechanism.endswith("-backward"):
        return FLA_BACKWARD_OF_MECHANISM.get(mechanism.removesuffix("-backward"), [None])
    return FLA_FUNCTIONS_OF_MECHANISM.get(mechanism, [None])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("fixtures", nargs="+", help="larc fixture files or folders of *.safetensors")
    p.add_argument("--out", default="fla_candidates", help="folder for the candidate files (default: fla_candidates)")
    p.add_argument("--larc", help="path to the larc program: run `larc diff` on every pair")
    p.add_argument("--larc-diff-arg", action="append", default=[], help="extra argument for `larc diff` (repeatable)")
    p.add_argument("--grade", default="fp32", choices=["fp32", "io", "io:tf32", "io:tf32-truncated"],
                   help="the precision grade FLA's outputs are judged at (larc diff --grade; default fp32)")
    p.add_argument("--report", help="write a Markdown summary here (with --larc)")
    p.add_argument("--triton-f32", choices=["ieee", "tf32", "tf32x3"],
                   help="set TRITON_F32_DEFAULT (fp32 dot precision) before FLA loads; unset: Triton's default")
    p.add_argument("--device", default="cuda",
                   help="torch device FLA runs on (default cuda; cpu only checks this script with a stand-in for FLA)")
    return p.parse_args()


def fixture_files(paths):
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.rglob("*.safetensors"))
        elif p.is_file():
            files.append(p)
        else:
            raise SystemExit(f"fla_diff: {p}: no such file or directory")
    return files


def scale_of(parameters, K):
    """The fixture's scale: a number, "K^-1/2", or None when the fixture does not say."""
    s = parameters.get("scale")
    if s is None:
        return None
    if isinstance(s, (int, float)):
        return float(s)
    if s == "K^-1/2":
        return K ** -0.5
    raise ValueError(f"parameters.scale: cannot read {s!r} (expected a number or \"K^-1/2\")")


def run_function(function, t, scale):
    """FLA's `function` on the fixture's tensors `t` through larc's adapters (python/larc/fla.py, the
    calls larc.gate makes in-process): the outputs by name."""
    if function == "chunk_log_linear_attn" and "initial_state" in t:
        raise ValueError("chunk_log_linear_attn's initial state is per level; larc's fixtures give none")
    out = larc_fla.KERNELS[function](**t, scale=scale)
    # o alone (log-linear: FLA's final state is per level, not one [B,H,K,V] tensor), or (o, final_state)
    return {"o": out} if not isinstance(out, tuple) else {"o": out[0], "final_state": out[1]}


def run_backward(function, inputs, scale, gradients):
    """FLA's backward of `function` through torch autograd: the fixture's inputs with requires_grad (a
    zero initial state where the fixture has none but dh0 is wanted), FLA's forward, then
    torch.autograd.grad with the fixture's do and dht. Returns the gradients by the twin's names;
    raises larc.autograd.BackwardRaised when FLA's backward raises, ValueError when a gradient is missing."""
    import torch
    t = {n: x for n, x in inputs.items() if n not in ("do", "dht")}
    if "dh0" in gradients and "initial_state" not in t:
        B, T, HV, V = inputs["do"].shape
        t["initial_state"] = torch.zeros(B, HV, inputs["q"].shape[-1], V, dtype=torch.float32, device=inputs["do"].device)
    leaves = {n: x.detach().requires_grad_(True) for n, x in t.items() if larc_autograd.GRADIENT_OF.get(n) in gradients}
    t.update(leaves)
    outputs = run_function(function, t, scale)
    grads, problems = larc_autograd.differentiate(outputs, leaves, inputs["do"], inputs.get("dht"))
    missing = [n for n in gradients if grads.get(n) is None]
    if problems or missing:
        raise ValueError("; ".join(problems + [f"{n}: FLA's autograd gives no gradient" for n in missing]))
    return {n: grads[n] for n in gradients}


def bitwise_equal(a, b):
    import torch
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return torch.equal(a.contiguous().view(ints), b.contiguous().view(ints))


def make_candidate(path, function, out_dir, versions, device="cuda"):
    """Runs FLA's `function` (its backward on a gradient fixture) on one fixture; returns (candidate path or
    None, note)."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {}
    mechanism = metadata.get("mechanism")
    if mechanism is None:
        raise ValueError("__metadata__ has no \"mechanism\" (not a larc fixture)")
    parameters = json.loads(metadata.get("parameters", "{}"))
    if function is None:
        return None, f"skipped: no FLA counterpart run here for mechanism {mechanism!r}"
    if metadata.get("dtype") == "fp64":
        return None, "skipped: FLA's Triton kernels take no float64"
    if metadata.get("dtype") in REFUSED_DTYPES.get(function, {}):
        return None, f"skipped: {REFUSED_DTYPES[function][metadata['dtype']]}"
    loaded = load_file(str(path), device=device)
    inputs = {name: t for name, t in loaded.items() if not name.startswith("oracle")}
    # A gradient fixture's outputs are the gradients its oracle holds.
    gradients = [n.removeprefix("oracle.") for n in loaded if n.startswith("oracle.")] if mechanism.endswith("-backward") else None
    K, V = inputs["q"].shape[-1], inputs["v"].shape[-1]
    if function == "chunk_log_linear_attn" and (K % 64 != 0 or V & (V - 1) != 0):
        return None, f"skipped: chunk_log_linear_attn takes K a multiple of 64 and V a power of two (K={K}, V={V})"
    # A case's own scale (the scale_factor knob) is its input "scale" [1]; else the mechanism's default.
    scale = float(inputs.pop("scale")[0]) if "scale" in inputs else scale_of(parameters, K)
    try:
        results = [run_function(function, inputs, scale) if gradients is None else
                   run_backward(function, inputs, scale, gradients) for _ in range(2)]
    except larc_autograd.BackwardRaised as e:
        return None, f"refused: {function}'s backward raised {e}"
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    deterministic = all(bitwise_equal(results[0][n], results[1][n]) for n in results[0])
    tensors = {n: t.detach().contiguous().cpu() for n, t in results[0].items()}
    candidate = out_dir / f"{path.stem}.{function}.safetensors"
    save_file(tensors, str(candidate), metadata={
        "fixture": path.name, "mechanism": mechanism, "fla_function": function,
        "scale": "FLA default" if scale is None else repr(scale), "deterministic": "yes" if deterministic else "no",
        **versions})
    shapes = ", ".join(f"{n} {str(t.dtype).removeprefix('torch.')} {list(t.shape)}" for n, t in tensors.items())
    what = function if gradients is None else f"{function} backward"
    return candidate, f"{what}: {shapes}; two runs bitwise {'equal' if deterministic else 'DIFFERENT'}"


def larc_diff(larc, fixture, candidate, extra):
    """Runs `larc diff`; returns (exit code, its output, its JSON result or None)."""
    kernel = "fla." + candidate.name.split(".")[-2]  # <fixture>.<function>.safetensors
    json_path = candidate.with_suffix(".diff.json")
    run = subprocess.run([larc, "diff", str(fixture), str(candidate), "--kernel", kernel, "--json", str(json_path), *extra],
                         capture_output=True, text=True)
    result = json.loads(json_path.read_text())["results"][0] if json_path.exists() else None
    return run.returncode, (run.stdout + run.stderr).strip(), result


def mechanism_of(path):
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        return (f.metadata() or {}).get("mechanism")


def main():
    args = parse_args()
    if args.triton_f32:
        os.environ["TRITON_F32_DEFAULT"] = args.triton_f32
    cuda = args.device.startswith("cuda")
    try:
        import torch
        import fla
        triton_version = __import__("triton").__version__ if cuda else "not used"
        for functions in [*FLA_FUNCTIONS_OF_MECHANISM.values(), *FLA_BACKWARD_OF_MECHANISM.values()]:
            for function in functions:  # imported now: a missing one is named here
                larc_fla.function(function)
    except ImportError as e:
        print(f"FAIL: {e} (needs torch with CUDA, triton, fla-core, einops, safetensors: "
              "python3 -m pip install --no-deps .wheels/*.whl)")
        return 2

    if cuda and not torch.cuda.is_available():
        print("FAIL: no CUDA device (FLA's kernels are Triton kernels)")
        return 2
    versions = {"fla_version": getattr(fla, "__version__", "?"), "torch_version": torch.__version__,
                "triton_version": triton_version, "device": torch.cuda.get_device_name() if cuda else args.device,
                "triton_f32_default": os.environ.get("TRITON_F32_DEFAULT", "unset")}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    rows, worst = [], 0
    for path in fixture_files(args.fixtures):
        mechanism = mechanism_of(path)
        # A gradient twin has no io form (its only grade is fp32), so a backward fixture is judged at fp32.
        diff_args = ["--grade", "fp32" if mechanism.endswith("-backward") else args.grade, *args.larc_diff_arg]
        for function in functions_of(mechanism):
            row = {"fixture": str(path), "function": function, "note": "", "rc": None, "larc": "", "result": None}
            try:
                candidate, row["note"] = make_candidate(path, function, out_dir, versions, args.device)
            except Exception as e:  # a failing fixture or FLA call is reported, the others still run
                candidate, row["note"], worst = None, f"error: {type(e).__name__}: {e}", 2
            if candidate is not None and args.larc:
                row["rc"], row["larc"], row["result"] = larc_diff(args.larc, path, candidate, diff_args)
                worst = max(worst, row["rc"] if row["rc"] in (0, 1) else 2)
            rows.append(row)
            verdict = {None: "", 0: " -> larc diff: pass", 1: " -> larc diff: VIOLATION"}.get(row["rc"], f" -> larc diff: exit {row['rc']}")
            print(f"{path}: {row['note']}{verdict}", flush=True)

    if args.report:
        write_report(args.report, rows, versions, " ".join(sys.argv), args.grade)
    ran = [r for r in rows if r["function"] and r["note"].startswith(r["function"])]
    counts = {k: sum(r["rc"] == k for r in ran) for k in (0, 1)}
    errors = sum(r["note"].startswith("error") for r in rows) + sum(r["rc"] not in (None, 0, 1) for r in ran)
    refused = sum(r["note"].startswith("refused") for r in rows)
    summary = (f"{len(rows)} fixtures, FLA ran on {len(ran)}" + (f", {refused} backward refused by FLA" if refused else "")
               + (f", larc diff: {counts[0]} pass, {counts[1]} violations" if args.larc else ", larc diff not run (no --larc)")
               + f", {errors} errors; candidates in {out_dir}")
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
             "| fixture | FLA run | larc diff |", "|---|---|---|"]
    for r in rows:
        verdict = {None: "-", 0: "pass", 1: "**violation**"}.get(r["rc"], f"exit {r['rc']}")
        lines.append(f"| {Path(r['fixture']).name} | {r['note']} | {verdict} |")
    lines += ["", f"Per output, judged at the declared grade {grade} (larc diff --grade): the max relative error, the "
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
