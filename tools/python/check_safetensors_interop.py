#!/usr/bin/env python3
"""Checks that larc's safetensors files and the `safetensors` Python package agree, both ways.

(a) Every --fixture (written by larc) is loaded with the `safetensors` package (PyTorch when it is
    installed, else numpy) and compared with what larc itself reads from it (`larc fixtures show
    --json --values`): the same tensor names, dtypes, shapes, values (bit for bit, NaN and -0 included)
    and metadata.
(b) A file with F64, F32, F16 and BF16 tensors (normal, subnormal, signed zero, +-inf, NaN) and
    metadata is written with the `safetensors` package into --out, then read by larc, whose values must
    equal the written ones exactly.

Prints one final line, PASS or FAIL (or SKIP, exit 77, when the `safetensors` package or both torch and
numpy are missing: they are not a CI dependency).
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

SKIP = 77

try:
    import safetensors
except ImportError:
    print("SKIP: the Python `safetensors` package is not installed (pip install safetensors numpy)")
    sys.exit(SKIP)
try:
    import torch
    import safetensors.torch
except ImportError:
    torch = None
try:
    import numpy as np
except ImportError:
    np = None
if torch is None and np is None:
    print("SKIP: neither torch nor numpy is installed")
    sys.exit(SKIP)

FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")


def larc_show(larc, path):
    """What larc reads from `path`: {name: (dtype, shape, values)} and the metadata."""
    run = subprocess.run([larc, "fixtures", "show", "--json", "--values", path], capture_output=True, text=True)
    if run.returncode != 0:
        raise AssertionError(f"larc fixtures show {path}: exit {run.returncode}: {run.stderr.strip()}")
    doc = json.loads(run.stdout)
    special = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
    tensors = {}
    for t in doc["tensors"]:
        values = [special[v] if isinstance(v, str) else v for v in t["values"]]
        tensors[t["name"]] = (t["dtype"], list(t["shape"]), values)
    return tensors, doc["metadata"]


def bf16_bits_to_float(bits):
    """Exact value of bfloat16 bit patterns (the top half of a float32)."""
    return [struct.unpack("<f", struct.pack("<I", b << 16))[0] for b in bits]


def python_read(path):
    """What the `safetensors` package reads from `path`: {name: (dtype, shape, values)}, metadata."""
    with safetensors.safe_open(path, framework="pt" if torch is not None else "np") as f:
        metadata = f.metadata() or {}
    tensors = {}
    if torch is not None:
        names = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
                 torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}
        for name, t in safetensors.torch.load_file(path).items():
            wide = t.to(torch.float64) if names[t.dtype] in FLOAT_DTYPES else t.to(torch.int64)
            tensors[name] = (names[t.dtype], list(t.shape), wide.flatten().tolist())
        return tensors, metadata
    # numpy has no bfloat16: take the raw bytes from the package's own parser and decode them here.
    numpy_types = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
                   "U8": np.uint8, "BOOL": np.bool_}
    with open(path, "rb") as f:
        for name, view in safetensors.deserialize(f.read()):
            dtype, shape, data = view["dtype"], list(view["shape"]), bytes(view["data"])
            if dtype == "BF16":
                values = bf16_bits_to_float(np.frombuffer(data, dtype="<u2").tolist())
            else:
                array = np.frombuffer(data, dtype=numpy_types[dtype])
                values = array.astype(np.float64 if dtype in FLOAT_DTYPES else np.int64).tolist()
            tensors[name] = (dtype, shape, values)
    return tensors, metadata


def same_value(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b and (a != 0 or math.copysign(1, a) == math.copysign(1, b))


def compare(expected, got, what):
    """Differences between two {name: (dtype, shape, values)} maps, as messages."""
    problems = []
    if set(expected) != set(got):
        problems.append(f"{what}: tensor names differ: {sorted(expected)} vs {sorted(got)}")
    for name in sorted(set(expected) & set(got)):
        (d1, s1, v1), (d2, s2, v2) = expected[name], got[name]
        if (d1, s1) != (d2, s2):
            problems.append(f"{what}: tensor '{name}': {d1} {s1} vs {d2} {s2}")
            continue
        bad = [i for i, (a, b) in enumerate(zip(v1, v2)) if not same_value(a, b)]
        if len(v1) != len(v2) or bad:
            i = bad[0] if bad else min(len(v1), len(v2))
            problems.append(f"{what}: tensor '{name}': {len(bad)} values differ; first at flat index {i}: "
                            f"{v1[i] if i < len(v1) else None!r} vs {v2[i] if i < len(v2) else None!r}")
    return problems


def check_larc_file(larc, path):
    """(a) a larc-written fixture read by the safetensors package and by larc."""
    py_tensors, py_metadata = python_read(path)
    larc_tensors, larc_metadata = larc_show(larc, path)
    problems = compare(py_tensors, larc_tensors, path)
    if py_metadata != larc_metadata:
        problems.append(f"{path}: metadata differs: {py_metadata} vs {larc_metadata}")
    return problems, len(py_tensors)


# Values every float dtype holds exactly or rounds to: normal, subnormal, signed zero, +-inf, NaN.
SPECIAL_VALUES = [0.0, -0.0, 1.0, -2.5, 0.15625, 3.0e-8, -6.0e-8, 1.0e-39, 65504.0, 3.0e38, math.inf, -math.inf, math.nan]
# Exactly bfloat16 (for the numpy path, which has no bfloat16 to round with): 1.5, -3, max, -min subnormal, 2^-126.
BF16_EXACT = [0.0, -0.0, 1.5, -3.0, float.fromhex("0x1.fep127"), -float.fromhex("0x1p-133"), float.fromhex("0x1p-126"),
              math.inf, -math.inf, math.nan]


def write_python_file(path):
    """(b) F64/F32/F16/BF16 tensors written by the safetensors package; returns what they hold."""
    metadata = {"writer": "check_safetensors_interop.py", "note": "values rounded by the writer"}
    if torch is not None:
        gen = torch.Generator().manual_seed(6)
        source = torch.cat([torch.tensor(SPECIAL_VALUES, dtype=torch.float64), torch.randn(24 - len(SPECIAL_VALUES), generator=gen, dtype=torch.float64)])
        tensors = {name: source.reshape(2, 3, 4).to(dtype)
                   for name, dtype in (("x_f64", torch.float64), ("x_f32", torch.float32), ("x_f16", torch.float16), ("x_bf16", torch.bfloat16))}
        tensors["s_bf16"] = torch.tensor(BF16_EXACT, dtype=torch.bfloat16)
        safetensors.torch.save_file(tensors, path, metadata=metadata)
    else:
        rng = np.random.default_rng(6)
        source = np.concatenate([np.array(SPECIAL_VALUES), rng.standard_normal(24 - len(SPECIAL_VALUES))])
        with np.errstate(over="ignore"):  # 3e38 becomes inf in F16, as intended
            arrays = {name: source.reshape(2, 3, 4).astype(dtype)
                      for name, dtype in (("x_f64", np.float64), ("x_f32", np.float32), ("x_f16", np.float16))}
        bf16_bits = np.array(BF16_EXACT, dtype=np.float32).view("<u4") >> 16  # exact: the values are bfloat16
        arrays["s_bf16"] = bf16_bits.astype("<u2")
        arrays["x_bf16"] = (source.astype(np.float32).view("<u4") >> 16).astype("<u2").reshape(2, 3, 4)  # truncated, still bf16
        specs = {}
        for name, a in arrays.items():
            dtype = "bfloat16" if name.endswith("bf16") else a.dtype.name
            specs[name] = safetensors.TensorSpec(dtype=dtype, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes)
        with open(path, "wb") as f:
            f.write(bytes(safetensors.serialize(specs, metadata=metadata)))
    return python_read(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--larc", required=True, help="path to the larc program")
    parser.add_argument("--fixture", action="append", default=[], help="a larc-written safetensors file (repeatable)")
    parser.add_argument("--out", required=True, help="folder for the file written by Python")
    args = parser.parse_args()
    backend = f"torch {torch.__version__}" if torch is not None else f"numpy {np.__version__}"
    problems, checked = [], []
    try:
        for path in args.fixture:
            p, n = check_larc_file(args.larc, path)
            problems += p
            checked.append(f"{os.path.basename(path)} ({n} tensors)")
        os.makedirs(args.out, exist_ok=True)
        written = os.path.join(args.out, "written_by_python.safetensors")
        expected, expected_metadata = write_python_file(written)
        larc_tensors, larc_metadata = larc_show(args.larc, written)
        problems += compare(expected, larc_tensors, written)
        if larc_metadata != expected_metadata:
            problems.append(f"{written}: metadata differs: {expected_metadata} vs {larc_metadata}")
        dtypes = sorted({d for d, _, _ in expected.values()})
        checked.append(f"written by Python: {', '.join(dtypes)} ({len(expected)} tensors)")
    except Exception as e:  # a crash is a failure with its reason on the FAIL line
        problems.append(f"{type(e).__name__}: {e}")
    for p in problems:
        print("  " + p)
    verdict = "FAIL" if problems else "PASS"
    print(f"{verdict}: safetensors {safetensors.__version__} via {backend}; checked {'; '.join(checked) or 'nothing'}"
          + (f"; {len(problems)} problems (above)" if problems else "; larc and Python read the same tensors"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
