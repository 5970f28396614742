#!/usr/bin/env python3
"""The backward kernels' speed table (tools/h200/kernels_run.sh backward-bench): each fused recurrent and
chunked backward kernel beside its own forward kernel of the same grade (the fused recurrent ones' target:
within 3x) and, for GDN and DeltaNet, beside FLA's chunk_delta_rule backward (the io-grade chunked GDN
backward's target: at least as fast from T = 8k); GLA's beside FLA's chunk_gla backward. Reads
gpu_kernels_bench's JSON (medians) and bench_peers.py --backward-only's JSON; writes bench.md and bench.json."""
import argparse
import json
import re

from bench_report import medians

TARGET_OWN_FORWARD = 3.0  # a fused recurrent backward within 3x its own forward's time
TARGET_PEER_FROM_T = 8192  # the io-grade chunked GDN backward at least as fast as FLA's from this T
PEER = {"gdn": "fla-chunk-delta-rule", "deltanet": "fla-chunk-delta-rule", "gla": "fla-chunk-gla"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--tree-hash", default="unknown")
    ap.add_argument("--markdown", required=True)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    # gpu_kernels_bench names a row "<kernel>/prefill/T=<T>/min_time:<s>": keyed here without the min_time part.
    ours = {re.sub(r"/min_time:[0-9.]+$", "", name): b for name, b in medians(json.load(open(args.kernels))).items()}
    peers = json.load(open(args.peers))
    peer_ms = {(r["peer"], r["kind"], r["T"]): r["ms"] for r in peers.get("rows", [])}
    rows = []
    for name, b in ours.items():
        # The family may hold hyphens (log-linear, log-linear-gdn); an io-grade backward's own forward is the
        # io-grade forward of the same form.
        m = re.match(r"^([a-z-]+?)-(fused-recurrent|chunked)-backward(-io)?/prefill/T=(\d+)$", name)
        if not m:
            continue
        family, form, grade, T = m.group(1), m.group(2), m.group(3) or "", int(m.group(4))
        forward = ours.get(f"{family}-{form}{grade}/prefill/T={T}")
        row = {"kernel": name.split("/")[0], "T": T, "ms": b["ms"], "forward_ms": forward["ms"] if forward else None}
        row["x_own_forward"] = row["ms"] / row["forward_ms"] if row["forward_ms"] else None
        peer = PEER.get(family)
        if peer and (peer, "backward", T) in peer_ms:
            row["peer"] = peer
            row["peer_backward_ms"] = peer_ms[(peer, "backward", T)]
            row["peer_forward_backward_ms"] = peer_ms.get((peer, "forward+backward", T))
            row["x_peer_backward"] = row["ms"] / row["peer_backward_ms"]
        if form == "fused-recurrent" and row["x_own_forward"] is not None:
            row["target"] = f"≤ {TARGET_OWN_FORWARD:g}× own forward: " + ("met" if row["x_own_forward"] <= TARGET_OWN_FORWARD else "not met")
        elif row["kernel"] == "gdn-chunked-backward-io" and T >= TARGET_PEER_FROM_T and "x_peer_backward" in row:
            row["target"] = "≤ 1× FLA's backward: " + ("met" if row["x_peer_backward"] <= 1 else "not met")
        rows.append(row)
    rows.sort(key=lambda r: (r["kernel"], r["T"]))
    result = {"tree_hash": args.tree_hash, "device": peers.get("device"), "fla": peers.get("fla"), "rows": rows,
              "peer_rows": peers.get("rows", []), "peer_errors": {k: v for k, v in peers.items() if k.endswith("error")}}
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)

    def fmt(x, digits=3):
        return "—" if x is None else f"{x:.{digits}g}"

    lines = [f"# Backward kernels on the {peers.get('device') or 'GPU'}: speed", "",
             f"Source tree (reference/ + gpu/): `{args.tree_hash}`; {peers.get('device')}, FLA {peers.get('fla')}. "
             "B = 1, H = 16, K = V = 128, bf16, do only (no dht, no initial state); medians of CUDA-event timings "
             "over rotated input copies (gpu_kernels_bench) and of triton.testing.do_bench (FLA, backward alone "
             "through torch.autograd.grad on a recorded forward). Targets: each fused recurrent backward within "
             f"{TARGET_OWN_FORWARD:g}x its own forward; the io-grade chunked GDN backward at least as fast as FLA's "
             f"chunk_delta_rule backward from T = {TARGET_PEER_FROM_T}.", "",
             "| kernel | T | backward ms | own forward ms | × own forward | FLA peer | peer backward ms | × peer | target |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['kernel']}` | {r['T']} | {fmt(r['ms'])} | {fmt(r['forward_ms'])} | "
                     f"{fmt(r['x_own_forward'])} | {r.get('peer', '—')} | {fmt(r.get('peer_backward_ms'))} | "
                     f"{fmt(r.get('x_peer_backward'))} | {r.get('target', '—')} |")
    if peers.get("rows"):
        lines += ["", "FLA (ms):", "", "| peer | kind | T | ms |", "|---|---|---|---|"]
        lines += [f"| {r['peer']} | {r['kind']} | {r['T']} | {r['ms']:.3f} |" for r in peers["rows"]]
    for k, v in result["peer_errors"].items():
        lines += ["", f"{k}: `{v}`"]
    open(args.markdown, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
