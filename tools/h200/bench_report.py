"""Joins the H200 timings of one run into reports/h200/bench.json and bench.md (issue 7, item 5).

Inputs: gpu_kernels_bench's Google Benchmark JSON (repetitions with aggregates; the median is used),
bench_peers.py's JSON (FLA fused recurrent GDN, SDPA, the copy bandwidth, VLA sequential PyTorch)
and the git tree hash of reference/ + gpu/ the binaries were built from.

Each row: {"kernel", "kind", "T", "B", "H", "D", "dtype", "ms", "bytes", "GBps", "floor_fraction",
"peer", "peer_ms", "speedup"}; floor_fraction = achieved bytes/s over the measured device-copy
bandwidth (the bytes a launch must move at least: inputs read once, outputs written once).
Peers: GDN kernels against FLA's fused_recurrent_gated_delta_rule (prefill and decode); every other
prefill row against PyTorch SDPA (causal) at the same T. The "vla_c10" section holds what VLA-C10
is judged on (properties/src/claims_vla.cpp reads it).
"""
import argparse
import json
import math
import re


def medians(bench):
    out = {}
    for b in bench["benchmarks"]:
        if b.get("aggregate_name", "median") != "median" or b.get("error_occurred"):
            continue
        name = re.sub(r"/manual_time(_median)?$", "", b["run_name"] if "run_name" in b else b["name"])
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        out[name] = dict(b, ms=b["real_time"] * scale)
    return out


def loglog_slope(points):
    xs = [math.log(t) for t, _ in points]
    ys = [math.log(ms) for _, ms in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def crossover(kernel, sdpa):
    """The T where the kernel's time meets SDPA's, interpolated on log-log between measured points."""
    common = sorted(set(kernel) & set(sdpa))
    for a, b in zip(common, common[1:]):
        da = math.log(kernel[a] / sdpa[a])
        db = math.log(kernel[b] / sdpa[b])
        if da > 0 >= db:
            f = da / (da - db)
            return math.exp(math.log(a) + f * (math.log(b) - math.log(a)))
    if common and kernel[common[0]] <= sdpa[common[0]]:
        return float(common[0])  # already faster at the shortest length measured
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--tree-hash", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--markdown", required=True)
    a = ap.parse_args()
    with open(a.kernels) as f:
        bench = json.load(f)
    with open(a.peers) as f:
        peers = json.load(f)
    bw = peers["copy_bandwidth_GBps"]
    peer_ms = {(p["peer"], p["kind"], p["T"], p["B"]): p["ms"] for p in peers["rows"]}
    rows = []
    for name, b in sorted(medians(bench).items()):
        kernel, kind = name.split("/")[:2]
        T, B, H, D = (int(b[c]) for c in ("T", "B", "H", "D"))
        ms, nbytes = b["ms"], b["bytes"]
        gbps = nbytes / (ms * 1e-3) / 1e9
        row = {"kernel": kernel, "kind": kind, "T": T, "B": B, "H": H, "D": D, "dtype": "bf16", "ms": ms,
               "bytes": nbytes, "GBps": gbps, "floor_fraction": gbps / bw, "peer": None, "peer_ms": None,
               "speedup": None}
        peer = "fla-fused-recurrent-gdn" if kernel.startswith("gdn-") else ("sdpa-causal" if kind == "prefill" else None)
        if peer and (peer, kind, T, B) in peer_ms:
            row["peer"], row["peer_ms"] = peer, peer_ms[(peer, kind, T, B)]
            row["speedup"] = row["peer_ms"] / ms
        rows.append(row)

    vla = {r["T"]: r["ms"] for r in rows if r["kernel"].startswith("vla-") and r["kind"] == "prefill"}
    sdpa = {p["T"]: p["ms"] for p in peers["rows"] if p["peer"] == "sdpa-causal"}
    vla_c10 = None
    if vla:
        seq = peers["vla_sequential_pytorch"]
        vla_c10 = {"kernel_ms": {str(t): ms for t, ms in sorted(vla.items())},
                   "sdpa_ms": {str(t): ms for t, ms in sorted(sdpa.items())},
                   "loglog_slope": loglog_slope(sorted(vla.items())),
                   "crossover_T": crossover(vla, sdpa),
                   "sequential_pytorch": seq,
                   "speedup_over_sequential": seq["ms"] / vla[seq["T"]] if seq["T"] in vla else None}
    report = {"tree_hash": a.tree_hash, "device": peers["device"], "torch": peers["torch"],
              "fla": peers.get("fla", peers.get("fla_error")), "copy_bandwidth_GBps": bw, "rows": rows,
              "peers": peers["rows"], "vla_c10": vla_c10}
    with open(a.json, "w") as f:
        json.dump(report, f, indent=2)

    md = [f"# larc kernels on the H200: speed\n",
          f"Source tree (reference/ + gpu/): `{a.tree_hash}`. Device: {peers['device']}, torch {peers['torch']}, "
          f"FLA {report['fla']}. Medians of CUDA-event timings (bench/gpu_kernels_bench.cpp; peers: "
          f"tools/h200/bench_peers.py, triton do_bench). Bandwidth floor: the measured device copy, "
          f"{bw:.0f} GB/s. B=1, H=16, D=128, bf16 inputs; decode rows: T=1, B = batch×heads, fp32 state in and out, time per launch in a stream of 32 back-to-back launches on rotated copies.\n",
          "| kernel | kind | T | B×H | ms | GB/s | of floor | peer | peer ms | speed-up |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['kernel']} | {r['kind']} | {r['T']} | {r['B'] * r['H']} | {r['ms']:.4g} | {r['GBps']:.0f} | "
                  f"{100 * r['floor_fraction']:.1f}% | {r['peer'] or ''} | "
                  f"{'' if r['peer_ms'] is None else format(r['peer_ms'], '.4g')} | "
                  f"{'' if r['speedup'] is None else format(r['speedup'], '.2f') + '×'} |")
    md.append("\n## Targets\n")
    gdn = [r for r in rows if r["kernel"] == "gdn-fused-recurrent" and r["kind"] == "prefill" and r["speedup"]]
    if gdn:
        worst = min(gdn, key=lambda r: r["speedup"])
        md.append(f"- GDN fused recurrent vs FLA fused recurrent (≥ 1.0× at every T): worst {worst['speedup']:.2f}× "
                  f"at T = {worst['T']} — {'met' if worst['speedup'] >= 1.0 else 'NOT met'}.")
    dec = [r for r in rows if r["kind"] == "decode" and r["B"] * r["H"] >= 132]
    if dec:
        worst = min(dec, key=lambda r: r["floor_fraction"])
        md.append(f"- Decode ≥ 60% of the bandwidth floor at batch×heads ≥ 132: worst {100 * worst['floor_fraction']:.1f}% "
                  f"({worst['kernel']}, B×H = {worst['B'] * worst['H']}) — {'met' if worst['floor_fraction'] >= 0.6 else 'NOT met'}.")
    if vla_c10:
        c = vla_c10["crossover_T"]
        md.append(f"- VLA-C10: time ∝ T^{vla_c10['loglog_slope']:.2f} over 2^10..2^17; crossover with SDPA at "
                  f"{'none in the range' if c is None else f'T ≈ {c:,.0f}'} (paper ≈ 43,000); "
                  f"{'' if vla_c10['speedup_over_sequential'] is None else format(vla_c10['speedup_over_sequential'], '.0f') + '×'} "
                  f"faster than the sequential PyTorch loop at T = {vla_c10['sequential_pytorch']['T']} (paper ≈ 14×).")
    with open(a.markdown, "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
