"""Runs flash-linear-attention's GDN forwards on the inputs of larc fixtures (issue 8: "relative error
<= FLA's on the same inputs"). For each FIXTURE (larc fixtures gen --mechanism gdn, FLA's layout:
q, k, v [B,T,H,K], g and beta [B,T,H], scale K^-1/2, zero initial state) it writes
OUTDIR/<fixture stem>.<peer>.safetensors holding "o" and "final_state" for peers fla-chunk-gdn
(chunk_gated_delta_rule) and fla-fused-recurrent-gdn; `larc diff FIXTURE CANDIDATE` then judges them
exactly as `larc gate --fixtures` judges larc's kernels on the same file.

Reads and writes safetensors itself (the device has torch but not the safetensors package).
"""
import argparse
import json
import pathlib
import struct

import torch

DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64}


def read_safetensors(path):
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        t = torch.frombuffer(bytearray(body[lo:hi]), dtype=DTYPES[info["dtype"]]) if hi > lo else torch.empty(0)
        tensors[name] = t.reshape(info["shape"])
    return tensors, header.get("__metadata__", {})


def write_safetensors(path, tensors):
    names = {v: k for k, v in DTYPES.items()}
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    pathlib.Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixtures", nargs="+")
    ap.add_argument("--outdir", required=True)
    a = ap.parse_args()
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
    peers = {"fla-chunk-gdn": chunk_gated_delta_rule, "fla-fused-recurrent-gdn": fused_recurrent_gated_delta_rule}
    out = pathlib.Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    for fixture in a.fixtures:
        t, meta = read_safetensors(fixture)
        if meta.get("mechanism") != "gdn":
            raise SystemExit(f"fla_accuracy: {fixture}: mechanism {meta.get('mechanism')!r}, expected 'gdn'")
        q, k, v, g, beta = (t[n].cuda() for n in ("q", "k", "v", "g", "beta"))
        scale = q.shape[-1] ** -0.5
        for peer, fn in peers.items():
            o, final = fn(q=q, k=k, v=v, g=g.float(), beta=beta, scale=scale, output_final_state=True)
            torch.cuda.synchronize()
            path = out / f"{pathlib.Path(fixture).stem}.{peer}.safetensors"
            write_safetensors(path, {"o": o, "final_state": final.float()})
            print(path)


if __name__ == "__main__":
    main()
