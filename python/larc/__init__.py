"""larc from Python: gate a kernel in-process against larc's certified oracle (docs/python.md).

    import larc
    larc.gate(my_kernel, mechanism="gdn", dtype="bf16", shape=(1, 256, 2, 64, 64), device="cuda")

Importing this package is cheap (the pytest plugin imports it at every pytest start): numpy and the
native library load on first use of anything below.
"""
__all__ = ["gate", "cases", "check", "Case", "Result", "GateFailure", "mechanisms", "record_profile", "tree_hash",
           "DTYPES", "GRADES"]


def __getattr__(name):
    if name == "gpu":  # larc's own CUDA kernels (larc/gpu.py), loaded on first use
        import importlib
        return importlib.import_module(".gpu", __name__)
    if name in __all__:
        from . import _case
        return getattr(_case, name)
    raise AttributeError(f"module 'larc' has no attribute {name!r}")
