#!/usr/bin/env bash
# Builds what tools/h200/kernels_run.sh runs on the H200 (statically, in build-static; the Python package
# with liblarc.so and the shared libraries it needs) and packs it into
# .h200bin/bundle.tar.xz with the tree hash of the committed reference/ + gpu/ it was built from
# (.h200bin/tree_hash; larc writes it into its reports there through LARC_TREE_HASH). Refuses to pack a
# build of uncommitted kernels: a report must name the source it was made from. LARC_BUNDLE_DIR=.h200bin_X
# packs into another folder, so that bundles of different programs for consecutive device calls can wait side
# by side (kernels_run.sh takes the same variable).
set -eu
cd "$(dirname "$0")/../.."
if [ -n "$(git status --porcelain -- reference gpu)" ]; then
  echo "bundle: reference/ or gpu/ has uncommitted changes; commit them first" >&2
  exit 1
fi
# LARC_BUNDLE_CPU=1 packs a bundle without CUDA (build-static-cpu: the larc program and the Python package,
# no kernels) for runs that judge other code's kernels (FLA's through tools/fla_diff.py and the pytest plugin).
if [ "${LARC_BUNDLE_CPU:-0}" = 1 ]; then
  build=build-static-cpu cuda=OFF targets=(larc)
else
  build=build-static cuda=ON
  targets=(larc gpu_device_test gpu_validation_test gpu_varlen_test gpu_kernels_test gpu_large_offsets_test gpu_decode_graph_test
           gpu_kernels_bench)
fi
# LARC_BUNDLE_TARGETS="larc gpu_kernels_test ..." packs those programs alone, without the Python package
# unless LARC_BUNDLE_PYTHON=1: every program holds every kernel, so the whole set with the tracked tree passes
# the device tool's 64 MiB carry only as a CPU bundle; a device call that needs a few programs carries a
# bundle of those.
python=1
if [ -n "${LARC_BUNDLE_TARGETS:-}" ]; then
  read -r -a targets <<< "$LARC_BUNDLE_TARGETS"
  python=${LARC_BUNDLE_PYTHON:-0}
fi
# The host code with FMA (LARC_FMA: the dd oracle about twice as fast, the same oracle bits; the H200 host's
# CPUs have FMA, and larc refuses a CPU without it by name). LARC_BUNDLE_FMA=0 builds without.
[ -f $build/CMakeCache.txt ] ||
  cmake -S . -B $build -G Ninja -DLARC_STATIC=ON -DLARC_ENABLE_CUDA=$cuda -DCMAKE_BUILD_TYPE=Release
# Hopper's machine code alone (no PTX): the H200 runs it, and the carry holds about twice as many programs.
cmake -S . -B $build -DLARC_FMA=$([ "${LARC_BUNDLE_FMA:-1}" = 1 ] && echo ON || echo OFF) -DLARC_CUDA_ARCHITECTURES=90a-real > /dev/null
cmake --build $build -j"$(nproc)" --target "${targets[@]}"
stage=$(mktemp -d)
mkdir "$stage/lib"
for t in "${targets[@]}"; do
  # The build's own binary, not the copy cli.cmake_package installs under tests/cli/cmake_package/prefix.
  f=$(find $build -path '*/prefix' -prune -o -type f -name "$t" -perm -u+x -print | head -1)
  cp "$f" "$stage/" && strip "$stage/$t"
  # Shared libraries the device machine lacks (Debian ships Google Benchmark only as a shared library):
  # everything but glibc's, run there with LD_LIBRARY_PATH=lib.
  ldd "$f" | awk '$3 ~ /^\// {print $3}' | grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
    xargs -r cp -L -t "$stage/lib"
done
# The Python package (python/, docs/python.md) with liblarc.so and the shared qd/mpfr/gmp/quadmath it
# links (static libmpfr cannot go into a shared object), found beside it through RUNPATH $ORIGIN. The
# host's own libstdc++ and libgcc_s serve libqd (it is newer than Debian's).
if [ $python = 1 ]; then
  cmake --build $build -j"$(nproc)" --target larc_python
  cp -r $build/python "$stage/python"
  strip --strip-unneeded "$stage/python/larc/liblarc.so"
  ldd $build/capi/liblarc.so | awk '$3 ~ /^\// {print $3}' |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' | xargs -r cp -L -t "$stage/python/larc"
fi
dir=${LARC_BUNDLE_DIR:-.h200bin}
mkdir -p "$dir"
# Every program holds the same device code (tens of MB of fatbin each): a dictionary larger than the whole
# stage lets xz store it once (a 64 MiB one, xz -9's, spans less than one program). Compressing takes about
# 11 times the dictionary in memory, unpacking the dictionary.
tar -cf - -C "$stage" . | xz -T1 --lzma2=preset=9,dict=512MiB > "$dir/bundle.tar.xz"
git ls-tree HEAD reference gpu | git hash-object --stdin > "$dir/tree_hash"
rm -rf "$stage"
ls -la "$dir"
