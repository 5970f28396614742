#!/usr/bin/env python3
"""How much the gate's float baselines of GDN's dβ and KLA's dη depend on the rounding of their decays
(docs/gate.md, "A window-only failure that first looked like a kernel defect").

For a GDN or KLA gradient fixture with dht alone, every (sequence, value head) runs through the reference's float
backward in both forms the gate uses as baselines (chunked UT/WY with chunk 64, and the serial adjoint): trial 0
with α = expf(g) as the harness forms it, then trials 1..N with a random half of the inexact α (not 0, not 1)
moved one ulp up or down — roundings as honest as a 1-ulp exp's. Each trial is judged against the exact dβ of
its own α (the serial adjoint in float64), so the spread is the algorithms' rounding, not the problem's change.
KLA's β = η / (‖k‖² + ε) is formed in float for the baselines (and, being derived too, moved like α in trials
1..N) and in float64 for the exact; dη = dβ / (‖k‖² + ε).

  --tokens:  the chunked form's relative error at given tokens of one sequence and value head;
  --recheck: for every GDN or KLA fp32 dht-only case of a recheck JSON (reports/emulation) that fails dβ (dη) on
             windows alone, the gate's window tolerance rebuilt per trial (k = 3 times the RMS over the window of
             the larger baseline error per timestep, plus the floor) against the kernel's window RMS error.

  tools/experiments/chunked_dbeta_spread.py --fixture F --sequence 1 --head 2 --tokens 222 225
  tools/experiments/chunked_dbeta_spread.py --recheck reports/emulation/fuzz_recheck_backward_chunked.json

Needs numpy, g++, a build of larc (build/tools/larc/larc, build/reference/liblarc_reference.a) and Eigen, MPFR."""
import argparse
import ctypes
import json
import os
import re
import struct
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
K_GRADIENT = 3.0  # harness/include/larc/harness/tolerance.h: k_gradient
KLA_EPS = 1e-6  # common/include/larc/common/mechanism_constants.h: kla_eps
LIBM_EXPF = ctypes.CDLL("libm.so.6").expf
LIBM_EXPF.restype, LIBM_EXPF.argtypes = ctypes.c_float, [ctypes.c_float]


def load_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    kinds = {"F32": np.float32, "F64": np.float64}
    return {name: np.frombuffer(data[t["data_offsets"][0]:t["data_offsets"][1]], dtype=kinds[t["dtype"]]).reshape(t["shape"])
            for name, t in header.items() if name != "__metadata__"}


def serial_dbeta(alpha, beta, k, v, s0, dht):
    """dβ of the serial adjoint in float64 (docs/gradients.md), dht alone."""
    T = len(alpha)
    S, r = s0.copy(), np.zeros_like(v)
    for t in range(T):
        decayed = alpha[t] * S
        r[t] = v[t] - decayed.T @ k[t]
        S = decayed + beta[t] * np.outer(k[t], r[t])
    dS, db = dht.copy(), np.zeros(T)
    for t in range(T - 1, -1, -1):
        du = dS.T @ k[t]
        db[t] = du @ r[t]
        dS = alpha[t] * (dS - beta[t] * np.outer(k[t], du))
    return db


class Draws:
    """The float baselines' dβ (KLA: dη) and the exact one of each trial's α, for every (sequence, value head)."""

    def __init__(self, fixture, driver, trials, seed):
        f = load_safetensors(fixture)
        if "dht" not in f or "g" not in f:
            raise SystemExit(f"{fixture}: expected a GDN or KLA gradient fixture with g and dht")
        kla = "eta" in f
        self.output = "deta" if kla else "dbeta"
        if "do" in f and np.any(f["do"]):
            raise SystemExit(f"{fixture}: has do; this experiment covers dht alone")
        B, T, HV = f["v"].shape[:3]
        group = HV // f["k"].shape[2]
        rng = np.random.default_rng(seed)
        shape = (trials + 1, B, HV, T)
        self.chunked, self.serial, self.exact = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        self.oracle = f[f"oracle.{self.output}"].transpose(0, 2, 1)  # [B, HV, T]
        for b in range(B):
            for hv in range(HV):
                q, k = (f[x][b, :, hv // group].astype(np.float64) for x in ("q", "k"))
                v = f["v"][b, :, hv].astype(np.float64)
                if kla:  # β as kla_beta forms it, in float for the baselines and in float64 for the exact
                    k32, eta = f["k"][b, :, hv // group], f["eta"][b, :, hv]
                    denom32 = (k32 * k32).sum(axis=1, dtype=np.float32) + np.float32(KLA_EPS)
                    beta = (eta / denom32).astype(np.float32).astype(np.float64)
                    denom = (k * k).sum(axis=1) + KLA_EPS
                    beta_exact, to_output, to_output32 = eta.astype(np.float64) / denom, 1 / denom, denom32
                else:
                    beta = beta_exact = f["beta"][b, :, hv].astype(np.float64)
                    to_output, to_output32 = 1.0, None
                s0 = f["initial_state"][b, hv].astype(np.float64) if "initial_state" in f else np.zeros((k.shape[1], v.shape[1]))
                dht = f["dht"][b, hv].astype(np.float64)
                alpha0 = np.array([LIBM_EXPF(float(x)) for x in f["g"][b, :, hv]], dtype=np.float32)  # the harness's α
                for trial in range(trials + 1):
                    alpha = alpha0.copy()
                    if trial > 0:  # exp is exact at 0 and −∞: those α stay
                        moved = (rng.random(T) < 0.5) & (alpha != 0) & (alpha != 1)
                        alpha[moved] = np.nextafter(alpha[moved], np.where(rng.random(moved.sum()) < 0.5, np.float32(0), np.float32(2)))
                    beta_t = beta
                    if trial > 0 and kla:  # KLA's β is derived too: a random half of it one ulp either way
                        b32 = beta.astype(np.float32)
                        moved = rng.random(T) < 0.5
                        b32[moved] = np.nextafter(b32[moved], np.where(rng.random(moved.sum()) < 0.5, np.float32(0), np.float32(4)))
                        beta_t = b32.astype(np.float64)
                    text = [f"{T} {k.shape[1]} {v.shape[1]}"]
                    for m in (q, k, v, alpha.reshape(-1, 1), beta_t.reshape(-1, 1), s0, dht):
                        text += [" ".join(repr(float(x)) for x in row) for row in np.atleast_2d(m)]
                    out = subprocess.run([driver], input="\n".join(text) + "\n", capture_output=True, text=True, check=True).stdout
                    cols = np.array([[float(x) for x in line.split()] for line in out.strip().split("\n")])
                    if to_output32 is not None:  # dη = dβ / (‖k‖² + ε), in float as the baselines form it
                        cols = (cols.astype(np.float32) / to_output32[:, None]).astype(np.float64)
                    self.chunked[trial, b, hv], self.serial[trial, b, hv] = cols[:, 0], cols[:, 1]
                    self.exact[trial, b, hv] = serial_dbeta(alpha.astype(np.float64), beta_exact, k, v, s0, dht) * to_output

    def window_tolerance(self, trial, w0, w1):
        """The gate's window tolerance (RMS) with this trial's baselines: per timestep the larger of the two
        baselines' errors over the slice, k times their RMS over the window, plus the floor's."""
        err = lambda y: np.sqrt(((y[trial] - self.exact[trial]) ** 2).sum(axis=(0, 1)))
        ez = np.maximum(err(self.chunked), err(self.serial))[w0:w1 + 1]
        o = self.oracle[:, :, w0:w1 + 1]
        floor = np.maximum(2.0 ** -24 * np.abs(o), 2.0 ** -150)
        ef = np.sqrt((floor ** 2).sum(axis=(0, 1)))
        return (K_GRADIENT * np.sqrt((ez ** 2).sum()) + np.sqrt((ef ** 2).sum())) / np.sqrt(w1 - w0 + 1)


def build_driver(tmp, build):
    driver = os.path.join(tmp, "driver")
    subprocess.run(["g++", "-std=c++20", "-O2", "-I", os.path.join(ROOT, "reference/include"), "-I",
                    os.path.join(ROOT, "common/include"), "-I", "/usr/include/eigen3",
                    os.path.join(HERE, "chunked_backward_dbeta.cpp"), "-o", driver,
                    os.path.join(build, "reference/liblarc_reference.a"), "-lmpfr", "-lgmp", "-lquadmath"], check=True)
    return driver


def tokens_mode(a, driver):
    d = Draws(a.fixture, driver, a.trials, a.seed)
    rel = np.abs(d.chunked[:, a.sequence, a.head] / d.exact[:, a.sequence, a.head] - 1)
    print(f"{a.fixture}, sequence {a.sequence}, value head {a.head}: the float chunked backward's relative dβ error")
    print(f"| token | α as expf gives it (trial 0) | min | median | 90th percentile | max (over {a.trials} trials of one-ulp α) |")
    print("|---|---|---|---|---|---|")
    for t in a.tokens:
        r = rel[1:, t]
        print(f"| {t} | {rel[0, t]:.2e} | {r.min():.2e} | {np.median(r):.2e} | {np.quantile(r, .9):.2e} | {r.max():.2e} |")


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
        gen = c["reproduce"].split()[1:]  # gate --subject S --mechanism M ...
        args = [x for i, x in enumerate(gen) if x != "gate" and gen[i - 1] != "--subject" and x != "--subject"]
        subprocess.run([os.path.join(a.build, "tools/larc/larc"), "fixtures", "gen", *args, "--out", fixture],
                       check=True, capture_output=True)
        d = Draws(fixture, driver, a.trials, a.seed)
        tols = np.array([d.window_tolerance(t, w0, w1) for t in range(a.trials + 1)])
        shape = re.search(r"--shape (\S+)", c["reproduce"])[1]
        print(f"| {c['kernel']} [{shape}] seed {c['reproduce'].split('--seed ')[1].split()[0]} | {w0}..{w1} | {kernel_rms:.3g} | "
              f"{gate_tol:.3g} | {tols[0]:.3g} | {np.median(tols[1:]):.3g} | {kernel_rms / np.median(tols[1:]):.2f} | "
              f"{int((tols[1:] >= kernel_rms).sum())} of {a.trials} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixture")
    ap.add_argument("--sequence", type=int)
    ap.add_argument("--head", type=int, help="value head")
    ap.add_argument("--tokens", type=int, nargs="+")
    ap.add_argument("--recheck", help="a recheck JSON whose failing GDN dβ window cases to rebuild")
    ap.add_argument("--trials", type=int, default=39)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    if bool(a.recheck) == bool(a.fixture and a.tokens):
        ap.error("give --recheck, or --fixture with --sequence, --head and --tokens")
    with tempfile.TemporaryDirectory() as tmp:
        driver = build_driver(tmp, a.build)
        if a.recheck:
            recheck_mode(a, driver, tmp)
        else:
            tokens_mode(a, driver)


if __name__ == "__main__":
    main()
