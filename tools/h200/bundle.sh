#!/usr/bin/env bash
# Builds what tools/h200/kernels_run.sh runs on the H200 (statically, in build-static) and packs it into
# .h200bin/bundle.tar.xz with the tree hash of the committed reference/ + gpu/ it was built from
# (.h200bin/tree_hash; larc writes it into its reports there through LARC_TREE_HASH). Refuses to pack a
# build of uncommitted kernels: a report must name the source it was made from.
set -eu
cd "$(dirname "$0")/../.."
if [ -n "$(git status --porcelain -- reference gpu)" ]; then
  echo "bundle: reference/ or gpu/ has uncommitted changes; commit them first" >&2
  exit 1
fi
targets=(larc gpu_device_test gpu_validation_test gpu_varlen_test gpu_kernels_test gpu_large_offsets_test gpu_kernels_bench)
[ -f build-static/CMakeCache.txt ] ||
  cmake -S . -B build-static -G Ninja -DLARC_STATIC=ON -DLARC_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=Release
cmake --build build-static -j"$(nproc)" --target "${targets[@]}"
stage=$(mktemp -d)
mkdir "$stage/lib"
for t in "${targets[@]}"; do
  # The build's own binary, not the copy cli.cmake_package installs under tests/cli/cmake_package/prefix.
  f=$(find build-static -path '*/prefix' -prune -o -type f -name "$t" -perm -u+x -print | head -1)
  cp "$f" "$stage/" && strip "$stage/$t"
  # Shared libraries the device machine lacks (Debian ships Google Benchmark only as a shared library):
  # everything but glibc's, run there with LD_LIBRARY_PATH=lib.
  ldd "$f" | awk '$3 ~ /^\// {print $3}' | grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
    xargs -r cp -L -t "$stage/lib"
done
mkdir -p .h200bin
# xz -9: its 64 MiB dictionary spans the binaries, whose device code is largely the same (under the
# device tool's 64 MiB carry with the working tree).
tar -cf - -C "$stage" . | xz -9 -T1 > .h200bin/bundle.tar.xz
git ls-tree HEAD reference gpu | git hash-object --stdin > .h200bin/tree_hash
rm -rf "$stage"
ls -la .h200bin
