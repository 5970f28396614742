#!/usr/bin/env python3
"""How much the float chunked (UT/WY) backward's dβ error at given tokens depends on the rounding of its
decays (docs/gate.md, "A window-only failure that first looked like a kernel defect"): for one (sequence,
value head) of a GDN gradient fixture with dht alone, the reference's chunked_backward<float> (chunk 64)
runs with α = exp(g) rounded once to fp32 (trial 0; ref-chunked-f32 takes expf's), then with a random half
of the α moved one ulp up or down (trials 1..N: roundings as honest as a 1-ulp exp's). Each trial is
judged against the exact dβ of its own α (the serial adjoint in float64), so the spread is the
algorithm's rounding, not the problem's change.

  tools/experiments/chunked_dbeta_spread.py FIXTURE --sequence 1 --head 2 --tokens 222 225 [--trials 39]

Needs numpy, g++ and a build of the reference (build/reference/liblarc_reference.a, Eigen, MPFR)."""
import argparse
import json
import os
import struct
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fixture")
    ap.add_argument("--sequence", type=int, required=True)
    ap.add_argument("--head", type=int, required=True, help="value head")
    ap.add_argument("--tokens", type=int, nargs="+", required=True)
    ap.add_argument("--trials", type=int, default=39)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    f = load_safetensors(a.fixture)
    if "dht" not in f or "g" not in f:
        raise SystemExit(f"{a.fixture}: expected a GDN gradient fixture with g and dht")
    group = f["v"].shape[2] // f["k"].shape[2]
    b, hv, hk = a.sequence, a.head, a.head // group
    q, k, v = (f[x][b, :, h].astype(np.float64) for x, h in (("q", hk), ("k", hk), ("v", hv)))
    g, beta = f["g"][b, :, hv], f["beta"][b, :, hv].astype(np.float64)
    s0 = f["initial_state"][b, hv].astype(np.float64) if "initial_state" in f else np.zeros((k.shape[1], v.shape[1]))
    dht = f["dht"][b, hv].astype(np.float64)
    if "do" in f and np.any(f["do"][b, :, hv]):
        raise SystemExit("the fixture has do: this experiment covers dht alone")
    T = len(g)

    with tempfile.TemporaryDirectory() as tmp:
        driver = os.path.join(tmp, "driver")
        subprocess.run(["g++", "-std=c++20", "-O2", "-I", os.path.join(ROOT, "reference/include"), "-I",
                        os.path.join(ROOT, "common/include"), "-I", "/usr/include/eigen3",
                        os.path.join(HERE, "chunked_backward_dbeta.cpp"), "-o", driver,
                        os.path.join(a.build, "reference/liblarc_reference.a"), "-lmpfr", "-lgmp", "-lquadmath"], check=True)
        rng = np.random.default_rng(a.seed)
        alpha0 = np.exp(g.astype(np.float64)).astype(np.float32)  # exp(g) rounded once to fp32
        errors = []
        for trial in range(a.trials + 1):
            alpha = alpha0.copy()
            if trial > 0:
                moved = rng.random(T) < 0.5
                alpha[moved] = np.nextafter(alpha[moved], np.where(rng.random(moved.sum()) < 0.5, np.float32(0), np.float32(2)))
            text = [f"{T} {k.shape[1]} {v.shape[1]}"]
            for m in (q, k, v, alpha.reshape(-1, 1), beta.reshape(-1, 1), s0, dht):
                text += [" ".join(repr(float(x)) for x in row) for row in np.atleast_2d(m)]
            out = subprocess.run([driver], input="\n".join(text) + "\n", capture_output=True, text=True, check=True).stdout
            chunked = np.array([float(x) for x in out.split()])
            exact = serial_dbeta(alpha.astype(np.float64), beta, k, v, s0, dht)
            errors.append([abs(chunked[t] / exact[t] - 1) for t in a.tokens])
    errors = np.array(errors)
    print(f"{a.fixture}, sequence {b}, value head {hv}: the float chunked backward's relative dβ error")
    print(f"| token | α rounded once (trial 0) | min | median | 90th percentile | max (over {a.trials} trials of one-ulp α) |")
    print("|---|---|---|---|---|---|")
    for i, t in enumerate(a.tokens):
        r = errors[1:, i]
        print(f"| {t} | {errors[0, i]:.2e} | {r.min():.2e} | {np.median(r):.2e} | {np.quantile(r, .9):.2e} | {r.max():.2e} |")


if __name__ == "__main__":
    main()
