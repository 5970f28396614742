"""larc's own CUDA kernels on torch tensors (docs/python.md "larc's kernels from torch").

    import larc, larc.gpu
    larc.gate(larc.gpu.kernel("gdn-chunked"), mechanism="gdn", dtype="bf16", shape=(1, 256, 2, 64, 64), device="cuda")

The kernels live in liblarc_gpu.so (capi/include/larc/c/larc_gpu.h), found at $LARC_GPU_LIBRARY, else
beside this file, where a build with CUDA stages it. They run on the caller's tensors and on torch's
current stream of the tensors' device; nothing is copied. Without the library (a build without CUDA)
`available()` is False and everything else raises RuntimeError saying so.
"""
import copy
import ctypes
import json
import os

from . import _arrays, _native

# larc's dtype name of a torch dtype, as gpu/'s launchers name them.
_GPU_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "int32": "int32", "int64": "int64"}


def _declare(lib):
    P, S = ctypes.c_void_p, ctypes.c_char_p
    lib.larc_gpu_kernels_json.restype, lib.larc_gpu_kernels_json.argtypes = P, []
    lib.larc_gpu_launch.restype, lib.larc_gpu_launch.argtypes = P, [S, S, ctypes.c_int, P, S]
    lib.larc_gpu_string_free.restype, lib.larc_gpu_string_free.argtypes = None, [P]
    return lib


LIBRARY = _native.SharedLibrary(
    "LARC_GPU_LIBRARY", "liblarc_gpu.so", _declare,
    lambda path: RuntimeError(f"larc.gpu: no liblarc_gpu.so at {path}: larc's kernels are built only where CUDA is "
                              "(nvcc on the PATH when configuring), or set LARC_GPU_LIBRARY"))


def available():
    """Whether liblarc_gpu.so is there (larc was built with CUDA). A device is another matter: a launch
    without one fails with the CUDA runtime's message."""
    return os.path.exists(LIBRARY.path())


def _library():
    return LIBRARY.get()


def _take(ptr):
    try:
        return ctypes.string_at(ptr).decode()
    finally:
        _library().larc_gpu_string_free(ptr)


_registry_of = (None, [])  # (the library it was read from, its registry): a library's registry is fixed


def _registry():
    global _registry_of
    lib = _library()
    if _registry_of[0] is not lib:
        ptr = lib.larc_gpu_kernels_json()
        if not ptr:
            raise RuntimeError("larc.gpu: the kernel registry could not be listed")
        _registry_of = (lib, json.loads(_take(ptr)))
    return _registry_of[1]


def kernels():
    """gpu/'s registry: [{"name", "mechanism", "description", "dtypes", "limits"}] (no device needed)."""
    return copy.deepcopy(_registry())


def find(name, mechanism=None):
    """The registry entry of kernel `name` (of `mechanism`, where two mechanisms share a kernel name)."""
    found = [k for k in _registry() if k["name"] == name and mechanism in (None, k["mechanism"])]
    if not found:
        raise ValueError(f"kernel: no larc kernel {name!r}" + (f" of mechanism {mechanism!r}" if mechanism else "") +
                         f" (larc.gpu.kernels() lists them: {', '.join(sorted({k['name'] for k in _registry()}))})")
    if len(found) > 1:
        raise ValueError(f"kernel: {name!r} is a kernel of {', '.join(k['mechanism'] for k in found)}: give mechanism=")
    return copy.deepcopy(found[0])


def _view(name, t):
    if not _arrays.is_torch(t) or t.device.type != "cuda":
        raise ValueError(f"{name}: expected a torch tensor on a CUDA device, got "
                         f"{getattr(t, 'device', type(t).__name__)}")
    dtype = _GPU_DTYPE.get(str(t.dtype).removeprefix("torch."))
    if dtype is None:
        raise ValueError(f"{name}: dtype {t.dtype} is not one larc's kernels take ({', '.join(_GPU_DTYPE)})")
    return {"data": t.data_ptr(), "dtype": dtype, "shape": list(t.shape), "strides": list(t.stride())}


def launch(name, inputs, outputs, mechanism=None, scale=None):
    """Enqueues kernel `name` on torch's current stream of the tensors' device: `inputs` and `outputs`
    map the mechanism's tensor names (FLA's layout) to CUDA tensors, the outputs written in place.
    Raises ValueError with the launcher's message (naming the tensor and what it expected) when the
    kernel refuses the launch; nothing is launched then."""
    _launch(find(name, mechanism), inputs, outputs, scale)


def _launch(entry, inputs, outputs, scale):
    tensors = {**inputs, **outputs}
    devices = {t.device for t in tensors.values() if _arrays.is_torch(t)}
    if len(devices) > 1:
        raise ValueError(f"inputs, outputs: every tensor must be on one device, got {sorted(map(str, devices))}")
    args = {"inputs": {n: _view(n, t) for n, t in inputs.items()}, "outputs": {n: _view(n, t) for n, t in outputs.items()}}
    if scale is not None:
        args["scale"] = float(scale)
    device = next(iter(devices))
    torch = _arrays.torch_module()
    stream = torch.cuda.current_stream(device).cuda_stream
    ptr = _library().larc_gpu_launch(entry["name"].encode(), entry["mechanism"].encode(), device.index or 0,
                                     ctypes.c_void_p(stream), json.dumps(args).encode())
    if ptr:
        raise ValueError(_take(ptr))


class Kernel:
    """A larc kernel as a callable of larc.gate and the pytest plugin: it takes the mechanism's inputs
    by name (torch tensors on a CUDA device) and returns its outputs by name, allocated here (NaN
    until the kernel writes them, so an element it leaves unwritten shows) on the inputs' device. A
    kernel without a read scale ignores `scale`; its case must then have the default one."""

    def __init__(self, name, mechanism=None):
        self.entry = find(name, mechanism)
        self.__name__ = self.entry["name"]
        if self.entry["limits"]["varlen"]:
            raise ValueError(f"kernel: {name!r} takes packed sequences (cu_seqlens): launch it with larc.gpu.launch")

    def __call__(self, **inputs):
        from . import _case
        torch = _arrays.torch_module()
        spec = _case.mechanisms()[self.entry["mechanism"]]
        scale = inputs.pop("scale", None)
        tensors = {n: t for n, t in inputs.items() if _arrays.is_torch(t)}
        sizes = {}
        for i in spec["inputs"]:
            t = tensors.get(i["name"])
            if t is None:
                continue
            if t.dim() != len(i["dims"]):
                raise ValueError(f"{i['name']}: expected {len(i['dims'])} dims ({i['dims']}), got shape {list(t.shape)}")
            for letter, n in zip(i["dims"], t.shape):
                sizes.setdefault(letter, int(n))
        dtype = tensors["q"].dtype if "q" in tensors else next(iter(tensors.values())).dtype
        device = next(iter(tensors.values())).device
        outputs = {}
        for o in spec["outputs"]:
            missing = [letter for letter in o["dims"] if letter not in sizes]
            if missing:
                raise ValueError(f"{o['name']}: its dims {o['dims']} need {''.join(missing)}, which no input given has")
            shape = [sizes[letter] for letter in o["dims"]]
            outputs[o["name"]] = torch.full(shape, float("nan"), dtype=torch.float32 if o["always_fp32"] else dtype,
                                            device=device)
        _launch(self.entry, tensors, outputs, scale if self.entry["limits"]["scale"] else None)
        return outputs


def kernel(name, mechanism=None):
    """Kernel `name` as a callable for larc.gate (see Kernel)."""
    return Kernel(name, mechanism)
