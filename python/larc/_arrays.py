"""Tensors between larc (raw little-endian elements in bf16, fp16, fp32 or fp64) and the caller's
arrays: numpy arrays (bf16 widened exactly to float32, numpy having no bfloat16) or torch tensors on
a device. Inputs are handed over in buffers followed by a NaN guard region, so that a callable writing
past an input's end shows."""
import numpy as np

GUARD_ELEMENTS = 64
# numpy's dtype for a larc dtype (bf16: float32 holding bf16 values exactly).
NUMPY_DTYPE = {"bf16": np.float32, "fp16": np.float16, "fp32": np.float32, "fp64": np.float64}
TORCH_DTYPE_NAME = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64"}
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bf16_bits_to_float32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def decode(raw, dtype, shape):
    """A numpy array of larc's raw bytes (bf16 widened to float32)."""
    if dtype == "bf16":
        return bf16_bits_to_float32(np.frombuffer(raw, dtype=np.uint16)).reshape(shape)
    return np.frombuffer(raw, dtype=NUMPY_DTYPE[dtype]).reshape(shape).copy()


def is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def torch_module():
    try:
        import torch
    except ImportError as e:
        raise ValueError(f"device: torch tensors need torch, which cannot be imported ({e})") from None
    return torch


def larc_dtype_of(x):
    """larc's dtype name of a numpy array or torch tensor, or None for other dtypes."""
    if is_torch(x):
        name = str(x.dtype).removeprefix("torch.")
        return {v: k for k, v in TORCH_DTYPE_NAME.items()}.get(name)
    return {np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32", np.dtype(np.float64): "fp64"}.get(np.asarray(x).dtype)


def host_raw(x, dtype):
    """(larc dtype, contiguous numpy array of x's elements) to hand to the library: torch tensors copied
    to the host, bf16 as its bit patterns."""
    if is_torch(x):
        t = x.detach().contiguous().cpu()
        if str(t.dtype) == "torch.bfloat16":
            torch = torch_module()
            return "bf16", t.view(torch.int16).numpy().view(np.uint16)
        return larc_dtype_of(t), t.numpy()
    a = np.ascontiguousarray(x)
    return larc_dtype_of(a) or dtype, a


def with_guard(a, torch_device=None):
    """A copy of numpy array `a` (or a torch tensor on torch_device) in a buffer followed by
    GUARD_ELEMENTS NaNs; returns (the view handed to the callable, the whole buffer)."""
    n = a.numel() if is_torch(a) else a.size
    if torch_device is None:
        buf = np.full(n + GUARD_ELEMENTS, np.nan, dtype=a.dtype)
        buf[:n] = a.reshape(-1)
        return buf[:n].reshape(a.shape), buf
    torch = torch_module()
    buf = torch.full((n + GUARD_ELEMENTS,), float("nan"), dtype=a.dtype, device=torch_device)
    buf[:n].copy_(a.reshape(-1))
    return buf[:n].view(a.shape), buf


def restore(buf, pristine):
    """Copies `pristine` back into `buf` in place (numpy, or torch on any device); outside autograd, as
    the buffer holds leaf tensors that require grad on a gradient case."""
    if not is_torch(buf):
        np.copyto(buf, pristine)
        return
    with torch_module().no_grad():
        buf.copy_(pristine)


def bitwise_equal(a, b):
    """Whether two arrays (numpy, or torch on any device) hold the same bits."""
    if is_torch(a) != is_torch(b) or tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        return False
    if is_torch(a):
        torch = torch_module()
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return bool(torch.equal(a.contiguous().view(ints), b.contiguous().view(ints)))
    return np.array_equal(np.ascontiguousarray(a).view(_BITS[a.dtype.itemsize]),
                          np.ascontiguousarray(b).view(_BITS[b.dtype.itemsize]))


def differing_elements(a, b):
    """How many elements of two same-shaped arrays differ bitwise."""
    if is_torch(a):
        torch = torch_module()
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return int((a.contiguous().view(ints) != b.contiguous().view(ints)).sum())
    bits = _BITS[a.dtype.itemsize]
    return int(np.count_nonzero(np.ascontiguousarray(a).view(bits) != np.ascontiguousarray(b).view(bits)))


def to_torch(a, dtype, device):
    """A torch tensor of numpy array `a` (larc dtype `dtype`; bf16 given widened to float32) on device."""
    torch = torch_module()
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.to(device=device, dtype=getattr(torch, TORCH_DTYPE_NAME[dtype]))
