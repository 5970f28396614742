"""CTest's entry to one test file of the larc Python package: exit 77 (CTest's SKIP_RETURN_CODE) when
numpy or pytest is missing from this interpreter, else pytest's exit code."""
import sys

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print(f"skipped: {e} (install python3-numpy and python3-pytest: tools/install-deps.sh)")
    sys.exit(77)

sys.exit(pytest.main([*sys.argv[1:], "-q", "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnknownMarkWarning"]))
