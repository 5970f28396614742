"""The peers larc's kernels are timed beside on the H200 (reports/h200/bench.md), in the same run:
flash-linear-attention's fused_recurrent_gated_delta_rule (prefill and decode), chunk_gated_delta_rule and
chunk_log_linear_attn (prefill), PyTorch SDPA (causal, FlashAttention backend) and, for VLA-C10, a
sequential PyTorch loop of the VLA recurrence (the paper's "sequential Python" baseline), plus the
device-copy bandwidth and the bf16 matmul rate that bound every row.

Timings are medians of triton.testing.do_bench (CUDA events, warm-up, L2 flushed between calls).
Writes one JSON object to --out. Inputs follow ../shared/anchors (unit-norm keys, sigmoid beta,
logsigmoid gates, B=1, H=16, D=128, bf16).
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F
from triton.testing import do_bench

B, H, D = 1, 16, 128


def median_ms(fn, warmup=25, rep=100):
    return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def gdn_inputs(b, t, h):
    q = torch.randn(b, t, h, D, device="cuda", dtype=torch.bfloat16)
    k = F.normalize(torch.randn(b, t, h, D, device="cuda"), dim=-1).to(torch.bfloat16)
    v = torch.randn(b, t, h, D, device="cuda", dtype=torch.bfloat16)
    beta = torch.rand(b, t, h, device="cuda").sigmoid().to(torch.bfloat16)
    g = F.logsigmoid(torch.rand(b, t, h, device="cuda"))
    return q, k, v, g, beta


def row(peer, kind, t, b, h, ms):
    return {"peer": peer, "kind": kind, "T": t, "B": b, "H": h, "D": D, "ms": ms}


def gdn_prefill_rows(peer, forward, Ts):
    """peer's prefill time on gdn_inputs at each T: forward(q=, k=, v=, g=, beta=, scale=)."""
    rows = []
    for t in Ts:
        q, k, v, g, beta = gdn_inputs(B, t, H)
        rows.append(row(peer, "prefill", t, B, H, median_ms(lambda: forward(q=q, k=k, v=v, g=g, beta=beta,
                                                                            scale=D ** -0.5))))
    return rows


def fla_rows(prefill_T, decode_BH):
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as fr
    rows = gdn_prefill_rows("fla-fused-recurrent-gdn", fr, prefill_T)
    for bh in decode_BH:
        q, k, v, g, beta = gdn_inputs(bh, 1, 1)
        h0 = torch.randn(bh, 1, D, D, device="cuda", dtype=torch.float32) * 0.1
        ms = median_ms(lambda: fr(q=q, k=k, v=v, g=g, beta=beta, scale=D ** -0.5, initial_state=h0,
                                  output_final_state=True))
        rows.append(row("fla-fused-recurrent-gdn", "decode", 1, bh, 1, ms))
    return rows


def fla_chunk_rows(gdn_T, log_linear_T):
    """FLA's chunked forwards at the anchors' settings (../shared/anchors/fla_speed.py): chunk GDN, and
    chunk log-linear with one shared q/k head group and L = ceil(log2 T) + 2 level scales."""
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.log_linear_attn import chunk_log_linear_attn
    rows = gdn_prefill_rows("fla-chunk-gdn", chunk_gated_delta_rule, gdn_T)
    for t in log_linear_T:
        q, k, v, g, _ = gdn_inputs(B, t, H)
        levels = int(math.ceil(math.log2(t))) + 2
        scales = torch.rand(B, t, H, levels, device="cuda", dtype=torch.bfloat16)
        q1, k1 = q[:, :, :1].contiguous(), k[:, :, :1].contiguous()
        ms = median_ms(lambda: chunk_log_linear_attn(q1, k1, v, g, scales), warmup=10, rep=50)
        rows.append(row("fla-chunk-log-linear", "prefill", t, B, H, ms))
    return rows


def fla_backward_rows(Ts, peers=("fla-chunk-delta-rule", "fla-chunk-gla")):
    """FLA's delta-rule and GLA backward (the chunk kernels whose backward runs on Hopper with Triton 3.6):
    the backward alone (torch.autograd.grad through a recorded forward) and forward + backward, on
    gdn_inputs (DeltaNet: no g; GLA: per-channel log-decays)."""
    from fla.ops.delta_rule import chunk_delta_rule
    from fla.ops.gla import chunk_gla
    rows = []
    for t in Ts:
        q, k, v, g, beta = gdn_inputs(B, t, H)
        gk = F.logsigmoid(torch.rand(B, t, H, D, device="cuda")) / 16
        cases = {"fla-chunk-delta-rule": (lambda q, k, v: chunk_delta_rule(q, k, v, beta, scale=D ** -0.5)[0]),
                 "fla-chunk-gla": (lambda q, k, v: chunk_gla(q, k, v, gk, scale=D ** -0.5)[0])}
        for peer, forward in cases.items():
            if peer not in peers:
                continue
            leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
            do = torch.randn_like(v)
            o = forward(*leaves)
            rows.append(row(peer, "backward", t, B, H, median_ms(
                lambda: torch.autograd.grad(o, leaves, do, retain_graph=True), warmup=10, rep=50)))
            rows.append(row(peer, "forward+backward", t, B, H, median_ms(
                lambda: torch.autograd.grad(forward(*leaves), leaves, do), warmup=10, rep=50)))
    return rows


def sdpa_rows(Ts):
    rows = []
    for t in Ts:
        q, k, v = (torch.randn(B, H, t, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), warmup=10, rep=50)
        rows.append(row("sdpa-causal", "prefill", t, B, H, ms))
    return rows


def vla_sequential_ms(t, lambda0=1.0, stab_eps=1e-4):
    """The VLA recurrence (SPEC §1, reference/vla.h State::step) token by token in PyTorch, fp32."""
    q, k, v = (torch.randn(B, H, t, D, device="cuda", dtype=torch.float32) for _ in range(3))
    u = F.normalize(k, dim=-1) / math.sqrt(D)
    phi = lambda x: F.elu(x) + 1

    def run():
        a = torch.eye(D, device="cuda").expand(B, H, D, D).clone() / lambda0
        s = torch.zeros(B, H, D, D, device="cuda")  # S^T: d_k x d_v
        zeta = torch.zeros(B, H, D, device="cuda")
        outs = []
        for i in range(t):
            z = torch.einsum("bhij,bhj->bhi", a, u[:, :, i])
            delta = (1 + (u[:, :, i] * z).sum(-1)).clamp_min(stab_eps)
            a = a - z.unsqueeze(-1) * (z / delta.unsqueeze(-1)).unsqueeze(-2)
            pk = phi(k[:, :, i])
            khat = F.normalize(pk, dim=-1)
            alpha = F.normalize(torch.einsum("bhij,bhj->bhi", a, khat), dim=-1)
            resid = v[:, :, i] - torch.einsum("bhkv,bhk->bhv", s, khat)
            s = s + alpha.unsqueeze(-1) * resid.unsqueeze(-2)
            zeta = zeta + pk
            pq = phi(q[:, :, i])
            den = (zeta * pq).sum(-1).clamp_min(stab_eps)
            outs.append(torch.einsum("bhkv,bhk->bhv", s, pq) / den.unsqueeze(-1))
        return torch.stack(outs, 2)

    run()  # warm-up
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop)


def copy_bandwidth_gbs():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x), warmup=5, rep=50)
    return 2 * x.numel() / (ms * 1e-3) / 1e9


def matmul_tflops():
    """The bf16 tensor-core rate a large cuBLAS matmul reaches: the compute floor of the chunked rows."""
    n = 8192
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    ms = median_ms(lambda: a @ b, warmup=10, rep=50)
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def write_rows(path, result, rows):
    """The rows into result, result to the JSON file, a line a row to stdout."""
    result["rows"] = rows
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    for r in rows:
        print(f"{r['peer']:26s} {r['kind']:17s} T={r['T']:<7d} B={r['B']:<5d} {r['ms']:.4f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--backward-only", action="store_true", help="only FLA's backward rows")
    ap.add_argument("--backward-peers", default="fla-chunk-delta-rule,fla-chunk-gla",
                    help="FLA's backward peers to time, comma-separated (chunk_gla's first call autotunes for minutes)")
    ap.add_argument("--chunk-gdn-only", action="store_true",
                    help="only the copy bandwidth, the matmul rate and FLA's chunk GDN rows (no backward: chunk_gla's "
                         "autotuning takes minutes)")
    ap.add_argument("--with-sdpa", action="store_true",
                    help="with --chunk-gdn-only: PyTorch SDPA's rows too (vla-chunked's peer)")
    ap.add_argument("--decode-only", action="store_true",
                    help="only the copy bandwidth and FLA's decode rows (kernels_run.sh decode-bench)")
    args = ap.parse_args()
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    if args.decode_only:
        result["copy_bandwidth_GBps"] = copy_bandwidth_gbs()
        try:
            import fla
            result["fla"] = getattr(fla, "__version__", "unknown")
            result["rows"] = fla_rows([], [16, 132, 1024])
        except Exception as e:  # a missing or broken FLA is reported, not hidden
            result["fla_error"] = repr(e)[:300]
            result["rows"] = []
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
        print(f"copy bandwidth {result['copy_bandwidth_GBps']:.0f} GB/s; {len(result['rows'])} FLA decode rows")
        return
    if args.backward_only:
        import fla
        result["fla"] = getattr(fla, "__version__", "unknown")
        write_rows(args.out, result, fla_backward_rows([2048, 8192, 32768], tuple(args.backward_peers.split(","))))
        return
    result["copy_bandwidth_GBps"] = copy_bandwidth_gbs()
    result["bf16_matmul_TFLOPs"] = matmul_tflops()
    rows = []
    chunk_T = [2048, 8192, 32768, 65536, 131072]
    try:
        import fla
        result["fla"] = getattr(fla, "__version__", "unknown")
        if args.chunk_gdn_only:
            rows += fla_chunk_rows(chunk_T, [])
        else:
            rows += fla_rows([2048, 8192, 32768], [16, 132, 1024])
            rows += fla_chunk_rows(chunk_T, [2048, 8192, 32768, 65536])
    except Exception as e:  # a missing or broken FLA is reported, not hidden
        result["fla_error"] = repr(e)[:300]
    if not args.chunk_gdn_only or args.with_sdpa:
        rows += sdpa_rows([1 << p for p in range(10, 18)])
    if not args.chunk_gdn_only:
        try:
            rows += fla_backward_rows([2048, 8192, 32768], tuple(args.backward_peers.split(",")))
        except Exception as e:
            result["fla_backward_error"] = repr(e)[:300]
        result["vla_sequential_pytorch"] = {"T": 2048, "B": B, "H": H, "D": D, "dtype": "fp32", "ms": vla_sequential_ms(2048)}
    write_rows(args.out, result, rows)
    print(f"bf16 matmul {result['bf16_matmul_TFLOPs']:.0f} TFLOP/s; copy bandwidth {result['copy_bandwidth_GBps']:.0f} GB/s")
    if "vla_sequential_pytorch" in result:
        print(f"VLA sequential PyTorch T=2048: {result['vla_sequential_pytorch']['ms']:.1f} ms")


if __name__ == "__main__":
    main()
