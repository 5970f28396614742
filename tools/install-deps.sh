#!/usr/bin/env bash
# Installs every build and test dependency of larc from Debian's packages (run as root).
# Used by the README's first command and by .ci/run, so the list lives here only.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# clang, its sanitizer and libFuzzer runtimes (libclang-rt-dev) and llvm-symbolizer (llvm): the
# sanitizer leg of .ci/run and the fuzzers in parser_fuzzers/.
# python3-matplotlib: the figures of `larc report` (docs/accuracy). python3-numpy, python3-pytest: the
# Python package's tests (python/; CTest runs them with /usr/bin/python3); python3-pytest-xdist: the
# plugin's test under pytest-xdist workers; python3-torch (CPU-only, about 176 MB of packages): the torch
# tensor and gradient tests (python.torch, python.grad), which skip without it.
apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ \
  libeigen3-dev libboost-dev libqd-dev libmpfr-dev libgmp-dev \
  librapidcheck-dev libgtest-dev libgmock-dev libbenchmark-dev \
  nlohmann-json3-dev libcli11-dev python3-matplotlib python3-numpy python3-pytest python3-pytest-xdist python3-torch \
  clang libclang-rt-dev llvm >/dev/null
