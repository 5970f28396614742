#!/usr/bin/env python3
"""How much the gate's float baselines of a GDN/KLA gradient depend on the rounding of their derived quantities
(docs/gate.md, "A window-only failure that first looked like a kernel defect").

For a GDN or KLA gradient fixture with dht alone, every (sequence, value head) runs through the reference's float
backward in both forms the gate uses as baselines (chunked UT/WY with chunk 64, and the serial adjoint):
- trial 0 with α = expf(g), as the harness forms it;
- trials 1..N with a random half of the inexact α (not 0, not 1) moved one ulp up or down, and likewise KLA's
  β = η / (‖k‖² + ε): roundings as honest as a 1-ulp exp's.
Each trial is judged against the exact gradient of its own α and β (the serial adjoint in float64), so the spread
is the algorithms' rounding, not the problem's change. Baseline outputs are rounded to the output's dtype, as the
gate rounds them; a window's tolerance is rebuilt as the gate builds it (k = 3 times the RMS over the window of the
larger baseline error per timestep, plus the floor).

  --tokens:   the chunked form's relative dβ (dη) error at given tokens of one sequence and value head;
  --profile:  a kernel's per-timestep errors (`larc gate … --record-profile P`) on the fixture's case: every full
              window of --output (dbeta, deta or, for GDN, dk) against the rebuilt tolerance, trial 0 and median;
  --recheck:  every GDN or KLA fp32 dht-only case of a recheck JSON (reports/emulation) that fails dβ (dη) on
              windows alone, its failing window against the rebuilt tolerance per trial.
  --honest-subjects: each trial's float chunked form judged as a subject would be, against the fixture's oracle
              and trial 0's tolerance (one rounding's, as the gate's baselines were) over every full window of
              --output: does a tolerance of one rounding pass the algorithm itself under another?

  tools/experiments/gradient_baseline_spread.py --fixture F --sequence 1 --head 2 --tokens 222 225
  tools/experiments/gradient_baseline_spread.py --fixture F --profile P --output dk
  tools/experiments/gradient_baseline_spread.py --recheck reports/emulation/fuzz_recheck_backward_chunked.json
  tools/experiments/gradient_baseline_spread.py --fixture F --honest-subjects --output dbeta

Needs numpy, g++, a build of larc (build/tools/larc/larc, build/reference/liblarc_reference.a), Eigen and MPFR."""
import argparse
import ctypes
import json
import os
import re
import subprocess
import tempfile

import numpy as np

import safetensors_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
K_GRADIENT = 3.0  # harness/include/larc/harness/tolerance.h: k_gradient
WINDOW = 64  # harness/include/larc/harness/tolerance.h: window
KLA_EPS = 1e-6  # common/include/larc/common/mechanism_constants.h: kla_eps
LIBM_EXPF = ctypes.CDLL("libm.so.6").expf
LIBM_EXPF.restype, LIBM_EXPF.argtypes = ctypes.c_float, [ctypes.c_float]
# Per dtype: unit roundoff and half the smallest subnormal (the gate's floor, harness/src/tolerance.cpp).
FLOORS = {"fp32": (2.0 ** -24, 2.0 ** -150), "fp16": (2.0 ** -11, 2.0 ** -25), "bf16": (2.0 ** -8, 2.0 ** -134)}


def round_to(x, dtype):
    """x rounded to the output dtype (round to nearest even), in float64."""
    if dtype == "fp32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "fp16":
        return x.astype(np.float16).astype(np.float64)
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def serial_gradients(alpha, beta, k, v, s0, dht):
    """dβ and dk of the serial adjoint in float64 (docs/gradients.md), dht alone."""
    T = len(alpha)
    S, r, decayed = s0.copy(), np.zeros_like(v), []
    for t in range(T):
        decayed.append(alpha[t] * S)
        r[t] = v[t] - decayed[t].T @ k[t]
        S = decayed[t] + beta[t] * np.outer(k[t], r[t])
    dS, db, dk = dht.copy(), np.zeros(T), np.zeros_like(k)
    for t in range(T - 1, -1, -1):
        du = dS.T @ k[t]
        db[t] = du @ r[t]
        dk[t] = dS @ (beta[t] * r[t]) - decayed[t] @ (beta[t] * du)
        dS = alpha[t] * (dS - beta[t] * np.outer(k[t], du))
    return db, dk


def moved_one_ulp(x, rng, keep):
    """A random half of x (float32) one ulp up or down, but where keep says."""
    x = x.copy()
    m = (rng.random(len(x)) < 0.5) & ~keep
    x[m] = np.nextafter(x[m], np.where(rng.random(m.sum()) < 0.5, np.float32(-np.inf), np.float32(np.inf)))
    return x


class Draws:
    """Per trial: the float baselines' step gradient (dβ, KLA's dη) and dk, and the exact ones of the trial's α, β."""

    def __init__(self, fixture, driver, trials, seed):
        f, meta = safetensors_file.read(fixture)
        if "dht" not in f or "g" not in f:
            raise SystemExit(f"{fixture}: expected a GDN or KLA gradient fixture with g and dht")
        if "do" in f and np.any(f["do"]):
            raise SystemExit(f"{fixture}: has do; this experiment covers dht alone")
        self.kla = "eta" in f
        self.dtype = meta["dtype"]
        B, T, HV, V = f["v"].shape
        H, K = f["k"].shape[2], f["k"].shape[3]
        group = HV // H
        rng = np.random.default_rng(seed)
        self.step = {x: np.zeros((trials + 1, B, HV, T)) for x in ("chunked", "serial", "exact")}
        self.dk = {x: np.zeros((trials + 1, B, H, T, K)) for x in ("chunked", "serial", "exact")}
        self.oracle = {"step": f["oracle.deta" if self.kla else "oracle.dbeta"].transpose(0, 2, 1),
                       "dk": f["oracle.dk"].transpose(0, 2, 1, 3)}
        for b in range(B):
            for hv in range(HV):
                hk = hv // group
                q, k = (f[x][b, :, hk].astype(np.float64) for x in ("q", "k"))
                v = f["v"][b, :, hv].astype(np.float64)
                if self.kla:  # β as kla_beta forms it, in float; dη = dβ / (‖k‖² + ε)
                    k32 = f["k"][b, :, hk].astype(np.float32)
                    denom32 = (k32 * k32).sum(axis=1, dtype=np.float32) + np.float32(KLA_EPS)
                    beta0 = f["eta"][b, :, hv].astype(np.float32) / denom32
                    denom = (k * k).sum(axis=1) + KLA_EPS
                else:
                    beta0 = f["beta"][b, :, hv].astype(np.float32)
                s0 = f["initial_state"][b, hv].astype(np.float64) if "initial_state" in f else np.zeros((K, V))
                dht = f["dht"][b, hv].astype(np.float64)
                alpha0 = np.array([LIBM_EXPF(float(x)) for x in f["g"][b, :, hv].astype(np.float32)], dtype=np.float32)
                for trial in range(trials + 1):
                    alpha, beta = alpha0, beta0
                    if trial > 0:  # exp is exact at 0 and −∞; GDN's β is an input, KLA's is derived
                        alpha = moved_one_ulp(alpha0, rng, (alpha0 == 0) | (alpha0 == 1))
                        if self.kla:
                            beta = moved_one_ulp(beta0, rng, np.zeros(T, bool))
                    text = [f"{T} {K} {V}"]
                    for m in (q, k, v, alpha.reshape(-1, 1), beta.reshape(-1, 1), s0, dht):
                        text += [" ".join(repr(float(x)) for x in row) for row in np.atleast_2d(m)]
                    out = subprocess.run([driver], input="\n".join(text) + "\n", capture_output=True, text=True, check=True).stdout
                    cols = np.array([[float(x) for x in line.split()] for line in out.strip().split("\n")])
                    db = {"chunked": cols[:, 0], "serial": cols[:, 1]}
                    dk = {"chunked": cols[:, 2:2 + K], "serial": cols[:, 2 + K:2 + 2 * K]}
                    db["exact"], dk["exact"] = serial_gradients(alpha.astype(np.float64), beta.astype(np.float64), k, v, s0, dht)
                    for form in ("chunked", "serial", "exact"):
                        step = db[form]
                        if self.kla:  # dη = dβ / (‖k‖² + ε); KLA's dk would gain the path through ‖k‖² (not covered)
                            step = (step.astype(np.float32) / denom32).astype(np.float64) if form != "exact" else step / denom
                        self.step[form][trial, b, hv] = step
                        self.dk[form][trial, b, hk] += dk[form]

    def output(self, name):
        if name == "dk" and self.kla:
            raise SystemExit("KLA's dk gains the path through ‖k‖²: not covered")
        return (self.dk, self.oracle["dk"]) if name == "dk" else (self.step, self.oracle["step"])

    def slice_errors(self, name, trial):
        """Per timestep: the larger of the two baselines' errors over the slice (rounded to the output dtype)."""
        d, _ = self.output(name)
        axes = tuple(i for i in range(d["exact"].ndim - 1) if i != 2)  # all but the time axis of [B, H, T(, K)]
        err = lambda form: np.sqrt(((round_to(d[form][trial], self.dtype) - d["exact"][trial]) ** 2).sum(axis=axes))
        return np.maximum(err("chunked"), err("serial"))

    def window_tolerance(self, name, trial, w0, w1):
        """The gate's window tolerance (RMS) with this trial's baselines."""
        _, oracle = self.output(name)
        ez = self.slice_errors(name, trial)[w0:w1 + 1]
        u, half_quantum = FLOORS[self.dtype]
        o = np.take(oracle, range(w0, w1 + 1), axis=2)
        ef2 = (np.maximum(u * np.abs(o), half_quantum) ** 2).sum()
        return (K_GRADIENT * np.sqrt((ez ** 2).sum()) + np.sqrt(ef2)) / np.sqrt(w1 - w0 + 1)


def build_driver(tmp, build):
    driver = os.path.join(tmp, "driver")
    subprocess.run(["g++", "-std=c++20", "-O2", "-I", os.path.join(ROOT, "reference/include"), "-I",
                    os.path.join(ROOT, "common/include"), "-I", "/usr/include/eigen3",
                    os.path.join(HERE, "delta_rule_float_backward.cpp"), "-o", driver,
                    os.path.join(build, "reference/liblarc_reference.a"), "-lmpfr", "-lgmp", "-lquadmath"], check=True)
    return driver


def tokens_mode(a, driver):
    d = Draws(a.fixture, driver, a.trials, a.seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(d.step["chunked"][:, a.sequence, a.head] / d.step["exact"][:, a.sequence, a.head] - 1)
    print(f"{a.fixture}, sequence {a.sequence}, value head {a.head}: the float chunked backward's relative "
          f"{'dη' if d.kla else 'dβ'} error")
    print(f"| token | trial 0 | min | median | 90th percentile | max (over {a.trials} trials) |")
    print("|---|---|---|---|---|---|")
    for t in a.tokens:
        r = rel[1:, t]
        print(f"| {t} | {rel[0, t]:.2e} | {r.min():.2e} | {np.median(r):.2e} | {np.quantile(r, .9):.2e} | {r.max():.2e} |")


def window_rows(d, name, kernel_rms, windows, trials):
    """(window, kernel's RMS, trial 0's tolerance, the median's, kernel ÷ median, trials it passes) per window."""
    for w0, w1 in windows:
        tols = np.array([d.window_tolerance(name, t, w0, w1) for t in range(trials + 1)])
        med = np.median(tols[1:])
        yield w0, w1, kernel_rms(w0, w1), tols[0], med, kernel_rms(w0, w1) / med, int((tols[1:] >= kernel_rms(w0, w1)).sum())


def profile_mode(a, driver):
    d = Draws(a.fixture, driver, a.trials, a.seed)
    errors = np.array(json.load(open(a.profile))["cases"][0]["outputs"][a.output]["error"])
    T = len(errors)
    windows = [(w0, w0 + WINDOW - 1) for w0 in range(0, max(1, T - WINDOW + 1))]
    rows = list(window_rows(d, a.output, lambda w0, w1: np.sqrt(np.mean(errors[w0:w1 + 1] ** 2)), windows, a.trials))
    fail0 = [r for r in rows if r[2] > r[3]]
    fail_med = [r for r in rows if r[5] > 1]
    print(f"{a.output}: {len(rows)} full windows; the kernel fails {len(fail0)} against trial 0's tolerance and "
          f"{len(fail_med)} against the median of {a.trials} trials"
          + (f" (worst {max(r[5] for r in fail_med):.2f}×)" if fail_med else ""))
    print("| window | kernel's RMS error | trial 0's tolerance | median tolerance | kernel ÷ median | trials it passes |")
    print("|---|---|---|---|---|---|")
    for w0, w1, kr, t0, med, ratio, passes in rows:
        if kr > t0 or ratio > 1:
            print(f"| {w0}..{w1} | {kr:.3g} | {t0:.3g} | {med:.3g} | {ratio:.2f} | {passes} of {a.trials} |")


def honest_subjects_mode(a, driver):
    """Every trial t ≥ 1's chunked form as a subject: its slice errors against the fixture's oracle (as the gate
    measures a kernel), every full window against trial 0's tolerance."""
    d = Draws(a.fixture, driver, a.trials, a.seed)
    forms, oracle = d.output(a.output)
    axes = tuple(i for i in range(oracle.ndim) if i != 2)
    T = oracle.shape[2]
    windows = [(w0, w0 + WINDOW - 1) for w0 in range(0, max(1, T - WINDOW + 1))]
    tol0 = np.array([d.window_tolerance(a.output, 0, w0, w1) for w0, w1 in windows])
    worst = []
    for trial in range(1, a.trials + 1):
        e = np.sqrt(((round_to(forms["chunked"][trial], d.dtype) - oracle) ** 2).sum(axis=axes))
        worst.append(max(np.sqrt(np.mean(e[w0:w1 + 1] ** 2)) / t for (w0, w1), t in zip(windows, tol0)))
    worst = np.array(worst)
    print(f"{a.fixture}, {a.output}: the float chunked form under {a.trials} honest roundings of its decays, judged "
          f"against trial 0's window tolerance over {len(windows)} full windows")
    print(f"fails: {int((worst > 1).sum())} of {a.trials}; worst window ratio: min {worst.min():.3g}, median "
          f"{np.median(worst):.3g}, 90th percentile {np.quantile(worst, .9):.3g}, max {worst.max():.3g}")


def recheck_mode(a, driver, tmp):
    results = json.load(open(a.recheck))["results"]
    window = re.compile(r"^d(?:beta|eta): window of timesteps (\d+)\.\.(\d+): RMS error ([0-9.e+-]+) > tolerance ([0-9.e+-]+)")
    print(f"| case | window | kernel's RMS error | gate's tolerance | rebuilt, trial 0 | median over {a.trials} trials | "
          f"kernel ÷ median tolerance | trials it passes |")
    print("|---|---|---|---|---|---|---|---|")
    for c in results:
        if c["pass"] or not c["kernel"].startswith(("gdn-chunked-backward", "kla-chunked-backward")) or c["dtype"] != "fp32":
            continue
        if c["knobs"].get("cotangents") != 2 or any(not window.match(e) for e in c["errors"]):
            continue
        m = window.match(c["errors"][0])
        w0, w1, kernel_rms, gate_tol = int(m[1]), int(m[2]), float(m[3]), float(m[4])
        fixture = os.path.join(tmp, "case.safetensors")
        words = c["reproduce"].split()[2:]  # after "larc gate": drop the subject, keep the case's description
        i = words.index("--subject")
        subprocess.run([os.path.join(a.build, "tools/larc/larc"), "fixtures", "gen", *(words[:i] + words[i + 2:]), "--out", fixture],
                       check=True, capture_output=True)
        d = Draws(fixture, driver, a.trials, a.seed)
        name = "deta" if d.kla else "dbeta"
        (_, _, _, t0, med, ratio, passes), = window_rows(d, name, lambda *_: kernel_rms, [(w0, w1)], a.trials)
        shape = re.search(r"--shape (\S+)", c["reproduce"])[1]
        seed = re.search(r"--seed (\S+)", c["reproduce"])[1]
        print(f"| {c['kernel']} [{shape}] seed {seed} | {w0}..{w1} | {kernel_rms:.3g} | {gate_tol:.3g} | {t0:.3g} | "
              f"{med:.3g} | {ratio:.2f} | {passes} of {a.trials} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixture")
    ap.add_argument("--sequence", type=int)
    ap.add_argument("--head", type=int, help="value head")
    ap.add_argument("--tokens", type=int, nargs="+")
    ap.add_argument("--profile", help="the kernel's `larc gate --record-profile` JSON on the fixture's case")
    ap.add_argument("--output", default="dbeta", choices=["dbeta", "deta", "dk"])
    ap.add_argument("--recheck", help="a recheck JSON whose failing GDN/KLA dβ (dη) window cases to rebuild")
    ap.add_argument("--honest-subjects", action="store_true", help="with --fixture: the algorithm's draws as subjects")
    ap.add_argument("--trials", type=int, default=39)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    modes = [bool(a.recheck), bool(a.fixture and a.tokens), bool(a.fixture and a.profile),
             bool(a.fixture and a.honest_subjects)]
    if sum(modes) != 1:
        ap.error("give --recheck, or --fixture with one of --tokens (and --sequence, --head), --profile, --honest-subjects")
    with tempfile.TemporaryDirectory() as tmp:
        driver = build_driver(tmp, a.build)
        if a.recheck:
            recheck_mode(a, driver, tmp)
        elif a.tokens:
            tokens_mode(a, driver)
        elif a.honest_subjects:
            honest_subjects_mode(a, driver)
        else:
            profile_mode(a, driver)


if __name__ == "__main__":
    main()
