"""ctypes bindings of liblarc.so (capi/include/larc/c/larc.h), loaded on first use.

The library is found at $LARC_LIBRARY, else beside this file (where the build's staging folder and a
pip install put it). Every call that fails raises ValueError with the library's message, which names
the argument and the problem; strings the library returns are copied and freed here.
"""
import ctypes
import json
import os
import threading

class SharedLibrary:
    """A native library of the package, loaded once, on first use: at $`env`, else `filename` beside
    this file. `missing(path)` is the exception raised when it is not there."""

    def __init__(self, env, filename, declare, missing):
        self._env, self._filename, self._declare, self._missing = env, filename, declare, missing
        self._lock = threading.Lock()
        self._lib = None

    def path(self):
        return os.environ.get(self._env) or os.path.join(os.path.dirname(os.path.abspath(__file__)), self._filename)

    def loaded(self):
        return self._lib is not None

    def forget(self):
        """Load again on next use (from the path as it is then)."""
        with self._lock:
            self._lib = None

    def get(self):
        with self._lock:
            if self._lib is None:
                path = self.path()
                if not os.path.exists(path):
                    raise self._missing(path)
                self._lib = self._declare(ctypes.CDLL(path))
        return self._lib


# larc_shrink_judge: a candidate's spec (JSON) -> its verdict (result JSON; NULL: none, the shrink stops).
SHRINK_JUDGE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64)]


def library_path():
    return _LIBLARC.path()


def lib():
    return _LIBLARC.get()


def loaded():
    return _LIBLARC.loaded()


def _declare(l):
    P, S, N = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    T = ctypes.POINTER(Tensor)
    for name, restype, argtypes in [
            ("larc_version", S, []), ("larc_tree_hash", P, []), ("larc_last_error", S, []),
            ("larc_string_free", None, [P]), ("larc_mechanisms_json", P, []), ("larc_plan_json", P, [S]),
            ("larc_case_prepare", P, [S]), ("larc_case_from_inputs", P, [S, T, N]),
            ("larc_case_read_fixture", P, [S]), ("larc_case_write_fixture", ctypes.c_int, [P, S, S]),
            ("larc_case_json", P, [P]), ("larc_case_tensor", ctypes.c_int, [P, S, T]), ("larc_case_free", None, [P]),
            ("larc_judge", P, [P, T, N, S]), ("larc_result_json", P, [P]), ("larc_result_free", None, [P]),
            ("larc_shrink", P, [S, S, SHRINK_JUDGE, P]),
            ("larc_profile_record", ctypes.c_int, [ctypes.POINTER(P), N, S]),
            ("larc_candidate_write", ctypes.c_int, [S, T, N, S])]:
        f = getattr(l, name)
        f.restype, f.argtypes = restype, argtypes
    return l


_LIBLARC = SharedLibrary(
    "LARC_LIBRARY", "liblarc.so", _declare,
    lambda path: ImportError(f"larc: no native library at {path}: build it (cmake --build build --target larc_python) "
                             "and use build/python, or set LARC_LIBRARY to liblarc.so (docs/python.md)"))


def _error():
    return ValueError(lib().larc_last_error().decode())


def checked(ptr):
    """A handle the library returned, or ValueError with its message when it is NULL."""
    if not ptr:
        raise _error()
    return ptr


def check_status(status):
    if status != 0:
        raise _error()


def take_string(ptr):
    """The library's string (freed here), or ValueError with its message when it is NULL."""
    checked(ptr)
    try:
        return ctypes.string_at(ptr).decode()
    finally:
        lib().larc_string_free(ptr)


def take_json(ptr):
    return json.loads(take_string(ptr))


def encode(obj):
    return json.dumps(obj).encode()


def tensor_array(tensors):
    """A ctypes array of Tensor for [(name, dtype, numpy array)], and what keeps its buffers alive."""
    arr = (Tensor * max(1, len(tensors)))()
    keep = []
    for i, (name, dtype, a) in enumerate(tensors):
        shape = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
        n, d = name.encode(), dtype.encode()
        keep += [shape, n, d, a]
        arr[i] = Tensor(n, d, a.ndim, shape, a.ctypes.data, a.nbytes)
    return arr, keep
