"""Reading and writing the safetensors files larc's fixtures and candidates are (docs/gate.md, "Fixtures"), with
numpy alone, for the experiments here that run without the larc package."""
import json
import struct

import numpy as np

_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64}


def read(path):
    """({name: array}, metadata): BF16 widened to float32, F16/F32/F64 as stored."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        chunk = data[t["data_offsets"][0]:t["data_offsets"][1]]
        if t["dtype"] == "BF16":
            a = (np.frombuffer(chunk, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(chunk, dtype=_DTYPES[t["dtype"]])
        out[name] = a.reshape(t["shape"])
    return out, header.get("__metadata__", {})


def write(path, tensors):
    """Writes {name: float32 array} (the form `larc diff` reads a candidate in)."""
    meta, chunks, offset = {}, [], 0
    for name, a in tensors.items():
        data = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        meta[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    h = json.dumps(meta).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(chunks))
