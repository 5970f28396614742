#!/usr/bin/env bash
# The H200 run of FLA's kernels under the gate (reports/h200/fla_diff*.md), sent through the device tool from the repository root with
# carry [".wheels", ".h200bin"]: flash-linear-attention's chunk kernels on larc's golden fixtures,
# judged by `larc diff`, with Triton's default fp32 dot precision and with IEEE fp32 dots; plus the
# safetensors interop check against the PyTorch host and the GPU device test. Builds nothing there:
# .h200bin holds larc and gpu_device_test built here statically (docs/gpu.md, "Running on the H200").
set -u
out=${OUT:-/tmp/out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .wheels/fla_core-*.whl \
  .wheels/flash_linear_attention-*.whl || exit 2
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
.h200bin/gpu_device_test 2>&1 | tail -3 | tee "$out/gpu_device_test.txt"
for mode in default ieee; do
  extra=(); [ "$mode" = ieee ] && extra=(--triton-f32 ieee)
  python3 tools/fla_diff.py fixtures/golden --out "/tmp/cand_$mode" --larc .h200bin/larc \
    --report "$out/fla_diff_$mode.md" "${extra[@]}" 2>&1 | tee "$out/fla_diff_$mode.log" | tail -25
done
fixture_args=(); for f in fixtures/golden/*.safetensors; do fixture_args+=(--fixture "$f"); done
python3 tools/python/check_safetensors_interop.py --larc .h200bin/larc --out /tmp/interop "${fixture_args[@]}" 2>&1 | tail -5 | tee "$out/interop.txt"
