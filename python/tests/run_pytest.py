"""CTest's entry to one test file of the larc Python package:
    run_pytest.py [--require MODULE] TEST_FILE
exits 77 (CTest's SKIP_RETURN_CODE) when numpy, pytest or the required module is missing from this
interpreter, else with pytest's exit code."""
import importlib
import sys

args = sys.argv[1:]
required = ["numpy", "pytest"]
if args[:1] == ["--require"]:
    required.append(args[1])
    args = args[2:]
for module in required:
    try:
        importlib.import_module(module)
    except ImportError as e:
        print(f"skipped: {e} (numpy, pytest: python3-numpy, python3-pytest from tools/install-deps.sh)")
        sys.exit(77)

import pytest  # noqa: E402

sys.exit(pytest.main([*args, "-q", "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnknownMarkWarning"]))
