#!/usr/bin/env bash
# The H200 runs of the fused and chunked kernels (reports/h200/README.md), sent through the device tool from the
# repository root with carry [".wheels", ".h200bin"]. Builds nothing there: .h200bin/bundle.tar.xz holds larc, the GPU
# tests and gpu_kernels_bench built here statically (docs/gpu.md, "Running on the H200"). The tree hash
# of the committed reference/ + gpu/ they were built from is .h200bin/tree_hash.
#
#   tools/h200/kernels_run.sh check   # GPU tests and the gate's small grid (minutes): first look
#   tools/h200/kernels_run.sh first-look  # KERNELS' GPU tests (GTEST_FILTER), compute-sanitizer and the gate's default grid
#     (TEST_LIMIT, GATE_LIMIT, SANITIZER_LIMIT: their seconds)
#   tools/h200/kernels_run.sh gate    # the gate's H200 grid, GPU tests and compute-sanitizer (< 10 min)
#   tools/h200/kernels_run.sh bench   # the benchmarks beside FLA and SDPA (< 10 min)
#     (BENCH_LIMIT, PEERS_TIMEOUT: their seconds)
#   tools/h200/kernels_run.sh accuracy  # larc's GDN kernels and FLA's on the same fixtures
#   tools/h200/kernels_run.sh perf    # bench, then accuracy (one device call: the gate's grid takes another)
#   tools/h200/kernels_run.sh full    # gate, bench, then accuracy
#   tools/h200/kernels_run.sh fuzz2   # one fuzz campaign over the kernels, one shard per GPU, merged
#   tools/h200/kernels_run.sh grades  # FLA's GDN kernels judged per precision grade; profiles of larc's GDN/KLA kernels
#   tools/h200/kernels_run.sh variants  # k_reg's false-alarm rate: each fused kernel's profile judging its wide-k launch
#   tools/h200/kernels_run.sh regimes # the gate's edge regimes (heavy tails, orthonormal keys, g = 0 and −∞, β up to 2)
#   tools/h200/kernels_run.sh python  # FLA's kernels gated in-process from pytest (examples/python, the larc package)
#   tools/h200/kernels_run.sh vocabulary  # read scales and initial states over the kernels; the gate's throughput
#   tools/h200/kernels_run.sh throughput  # the gate's throughput alone (< 3 min)
#   tools/h200/kernels_run.sh ncu     # Nsight Compute sections of the benchmark rows NCU_FILTER picks
#   tools/h200/kernels_run.sh torch   # larc's kernels gated from torch (larc.gpu), GPU tests, the gate's default grid
#   tools/h200/kernels_run.sh qk-l2norm  # FLA's kernels with in-kernel l2norm of raw q, k, judged per grade
#   tools/h200/kernels_run.sh grad-io  # FLA's backward on gradient fixtures at the io grade (a CPU-only bundle serves)
#   tools/h200/kernels_run.sh backward  # the backward kernels: GPU tests, the gradient gate, compute-sanitizer
#     (BACKWARD_TESTS=GTEST_FILTER picks the GPU tests; with KERNELS=chunked-backward, the new kernels' alone)
#   tools/h200/kernels_run.sh backward-bench  # the backward kernels' speed beside their forwards and FLA's backward
#   tools/h200/kernels_run.sh decode-bench  # the decode rows alone: one launch a step, decode-graph and
#     decode-steps (DECODE_FILTER, a --benchmark_filter regex, picks others), the copy bandwidth, FLA's decode (< 3 min)
# KERNELS=REGEX limits every mode to the kernels whose names match.
set -u
mode=${1:-check}
out=${OUT:-/tmp/out}
mkdir -p "$out" /tmp/bin
# LARC_BUNDLE_DIR names the bundle's folder (bundle.sh's), .h200bin by default. Two modes started side by side
# in one call share one extraction (the second finds the bundle's checksum there).
bundle=${LARC_BUNDLE_DIR:-.h200bin}
key="$(cat "$bundle/tree_hash") $(cksum < "$bundle/bundle.tar.xz")"
if [ "$(cat /tmp/bin/.bundle_key 2>/dev/null)" != "$key" ]; then
  tar -xJf "$bundle/bundle.tar.xz" -C /tmp/bin && echo "$key" > /tmp/bin/.bundle_key || exit 2
fi
export LARC_TREE_HASH=$(cat "$bundle/tree_hash")
B=/tmp/bin
# The bundle's liblarc.so, which tools/fla_diff.py judges FLA's outputs with (the larc package in-process).
export LARC_LIBRARY=$B/python/larc/liblarc.so
jobs=$(( $(nproc) - 1 ))
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
# The card the reports name in their titles (the device tool lends an H100 when no H200 starts).
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
# Every GPU kernel (registered as *-fused-recurrent* or *-chunked*), or those matching the extended
# regular expression KERNELS (e.g. KERNELS=chunked tools/h200/kernels_run.sh gate: a first look at new kernels).
gpu_subjects() {
  $B/larc gate --list | sed -n 's/^  \([a-z0-9-]*-\(fused-recurrent\|chunked\)[a-z-]*\) (.*/\1/p' | sort -u |
    grep -E "${KERNELS:-.}"
}
subject_args=(); for s in $(gpu_subjects); do subject_args+=(--subject "$s"); done

run_tests() {
  for t in gpu_device_test gpu_validation_test gpu_varlen_test gpu_kernels_test gpu_large_offsets_test gpu_decode_graph_test \
           gpu_recorded_cases_test; do
    [ -x $B/$t ] || continue
    timeout "${TEST_LIMIT:-300}" $B/$t --gtest_output=xml:"$out/$t.xml" > "$out/$t.log" 2>&1
    echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$t.log" | tr '\n' ' ')"
  done
}

# One report of the gate over the GPU subjects on the given shapes (with GATE_KNOBS), named NAME.
gate_group() {  # name, timeout, then shapes
  local name=$1 limit=$2; shift 2
  local shapes=(); for sh in "$@"; do shapes+=(--shape "$sh"); done
  timeout "$limit" $B/larc gate "${subject_args[@]}" --jobs "$jobs" "${shapes[@]}" ${GATE_KNOBS:-} --json "$out/gate_$name.json" \
    --markdown "$out/gate_$name.md" > "$out/gate_$name.txt" 2>&1
  echo "gate $name: exit $?"; tail -3 "$out/gate_$name.txt"
}
grid() { for T in "$@"; do for D in 64 128 96; do echo "1,$T,2,$D,$D"; done; done; }

# compute-sanitizer's four tools, in the background, each running the gate over subject_args on the small
# grid (bf16, shapes 1,65,2,32,32 and 2,1,1,96,64); arguments: the time limit, then extra gate options.
start_sanitizers() {
  local limit=$1; shift
  for tool in memcheck racecheck initcheck synccheck; do
    timeout "$limit" compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
      $B/larc gate "${subject_args[@]}" --dtype bf16 --shape 1,65,2,32,32 --shape 2,1,1,96,64 --random 0 "$@" \
      > "$out/sanitizer_$tool.txt" 2>&1; echo "compute-sanitizer $tool: exit $?" >> "$out/sanitizer_$tool.txt" &
  done
}

# sanitizers.md from start_sanitizers' logs; arguments: what was checked, the subjects, the mode.
sanitizer_report() {
  echo "# compute-sanitizer over $1 on the $card"; echo
  echo "Source tree (reference/ + gpu/): \`$LARC_TREE_HASH\`. Each tool ran \`larc gate\` over $2,"
  echo "bf16, shapes 1,65,2,32,32 and 2,1,1,96,64 (tools/h200/kernels_run.sh $3)."; echo
  echo "Exit 9 means the tool found an error; 1, that a gate case failed (gate.md); 0, neither."; echo
  echo "| tool | summary | exit |"; echo "|---|---|---|"
  for tool in memcheck racecheck initcheck synccheck; do
    echo "| $tool | $(grep -h 'SUMMARY' "$out/sanitizer_$tool.txt" | tail -1 | sed 's/^=* *//') | $(sed -n 's/^compute-sanitizer [a-z]*: exit //p' "$out/sanitizer_$tool.txt") |"
  done
}

install_fla() {
  [ -d /tmp/site/fla ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
    .wheels/fla_core-*.whl .wheels/flash_linear_attention-*.whl .wheels/einops-*.whl
}

# The gate's throughput (docs/perf-notes.md "The gate's throughput"): one case (1, 4096, 2, 128, 128) on 1 core
# and on all of them, and the production shape (1, 32768, 16, 128, 128) end to end on all of them.
gate_throughput() {
  one="--subject gdn-chunked --mechanism gdn --dtype bf16 --knob initial_state=0"
  TIMEFORMAT="wall %R s, user %U s, sys %S s"  # bash's own time: the host may lack /usr/bin/time
  for cores in 1 $(nproc); do
    { time timeout 45 $B/larc gate $one --shape 1,4096,2,128,128 --jobs "$cores" \
        --json "$out/throughput_4096_$cores.json" > /dev/null 2>&1; } 2> "$out/throughput_4096_$cores.time"
    echo "(1,4096,2,128,128) on $cores cores: $(cat "$out/throughput_4096_$cores.time")"
  done
  { time timeout 120 $B/larc gate $one --shape 1,32768,16,128,128 --jobs "$(nproc)" \
      --json "$out/throughput_production.json" > "$out/throughput_production.txt" 2>&1; } 2> "$out/throughput_production.time"
  echo "(1,32768,16,128,128) on $(nproc) cores: $(cat "$out/throughput_production.time"); exit $(grep -c '"pass": true' "$out/throughput_production.json" 2>/dev/null) passing"
}

case $mode in
check)
  run_tests
  timeout 400 $B/larc gate "${subject_args[@]}" --jobs "$jobs" --random 16 --json "$out/gate_small.json" \
    --markdown "$out/gate_small.md" > "$out/gate_small.txt" 2>&1
  echo "gate (default grid + 16 random): exit $?"; tail -40 "$out/gate_small.txt"
  ;;
first-look)
  # New kernels (KERNELS selects them): their GPU tests (GTEST_FILTER picks them), compute-sanitizer's four
  # tools over them on the small grid, and the gate's default grid plus GATE_RANDOM random cases.
  run_tests > "$out/tests.txt" 2>&1 &
  start_sanitizers "${SANITIZER_LIMIT:-200}"
  timeout "${GATE_LIMIT:-240}" $B/larc gate "${subject_args[@]}" --jobs "$jobs" --random "${GATE_RANDOM:-8}" \
    --json "$out/gate.json" --markdown "$out/gate.md" > "$out/gate.txt" 2>&1
  echo "gate (default grid + ${GATE_RANDOM:-8} random): exit $?"; tail -3 "$out/gate.txt"
  wait
  cut -c1-400 "$out/tests.txt"
  sanitizer_report "the kernels matching '$KERNELS'" "their GPU subjects" "first-look" > "$out/sanitizers.md"
  cat "$out/sanitizers.md"
  ;;
gate|full)
  # Correctness first, all at once (the oracle is CPU work; the GPU is shared): the GPU tests, the gate's
  # H200 grid (T ∈ {1, 63, 64, 65, 1000, 4096} × D ∈ {64, 128, 96}, every dtype; one
  # report per T group so a time limit loses only the group it stops), randomized cases with the golden
  # fixtures, and compute-sanitizer (memcheck, racecheck, initcheck, synccheck) over the gate's small grid.
  run_tests > "$out/tests.txt" 2>&1 &
  start_sanitizers 300
  gate_group T1-65 150 $(grid 1 63 64 65)
  # The same with a random initial state, for the kernels whose mechanism has one.
  h0="--knob initial_state=2 --mechanism gdn --mechanism deltanet --mechanism kla --mechanism la --mechanism gla"
  GATE_KNOBS=$h0 gate_group T1-65-h0 100 $(grid 1 63 64 65)
  GATE_KNOBS=$h0 gate_group T1000-h0 90 $(grid 1000)
  timeout 120 $B/larc gate "${subject_args[@]}" --jobs "$jobs" --no-grid --random 100 --fixtures fixtures/golden \
    --json "$out/gate_random.json" --markdown "$out/gate_random.md" > "$out/gate_random.txt" 2>&1
  echo "gate random + fixtures: exit $?"; tail -3 "$out/gate_random.txt"
  gate_group T1000 120 $(grid 1000)
  gate_group T4096 150 $(grid 4096)
  wait
  python3 tools/h200/join_gate_reports.py --device "$card" "$out"/gate_T*.json "$out/gate_random.json" --json "$out/gate.json" \
    --markdown "$out/gate.md" | tail -30
  cat "$out/tests.txt"
  sanitizer_report "every GPU kernel" "every GPU subject" "gate" > "$out/sanitizers.md"
  cat "$out/sanitizers.md"
  ;;&
bench|full|perf)
  # Speed, alone on the device.
  LD_LIBRARY_PATH=$B/lib timeout "${BENCH_LIMIT:-180}" $B/gpu_kernels_bench ${KERNELS:+--benchmark_filter=$KERNELS} --benchmark_repetitions=3 --benchmark_min_time=0.1 \
    --benchmark_report_aggregates_only=true --benchmark_format=json --benchmark_out="$out/bench_kernels.json" \
    > "$out/bench_kernels.txt" 2>&1
  echo "bench: exit $?"
  install_fla
  # PEERS_ARGS=--chunk-gdn-only times FLA's chunk GDN alone (the peer of the chunked forwards);
  # PEERS_ARGS="--backward-peers fla-chunk-delta-rule" skips chunk_gla's backward (its autotuning takes minutes).
  PYTHONPATH=/tmp/site timeout "${PEERS_TIMEOUT:-200}" python3 tools/h200/bench_peers.py --out "$out/bench_peers.json" ${PEERS_ARGS:-} \
    > "$out/bench_peers.txt" 2>&1
  echo "peers: exit $?"
  python3 tools/h200/bench_report.py --kernels "$out/bench_kernels.json" --peers "$out/bench_peers.json" \
    --tree-hash "$LARC_TREE_HASH" --json "$out/bench.json" --markdown "$out/bench.md" --bounds reports/h200/bounds.json | tail -30
  # Backward rows timed in the same run (KERNELS picking *-backward kernels): their table beside their forwards
  # and FLA's backward.
  if grep -q -- '-backward/prefill' "$out/bench_kernels.json" 2>/dev/null; then
    python3 tools/h200/bench_backward.py --kernels "$out/bench_kernels.json" --peers "$out/bench_peers.json" \
      --tree-hash "$LARC_TREE_HASH" --markdown "$out/bench_backward.md" --json "$out/bench_backward.json"
    cat "$out/bench_backward.md"
  fi
  ;;&
accuracy|full|perf)
  # The accuracy target "relative error <= FLA's on the same inputs". GDN fixtures in FLA's layout (B=1, T=4096,
  # H=4, D=128; float64-certified oracle), FLA's chunk outputs judged by larc diff,
  # larc's GDN kernels by the gate on the same files; accuracy.md joins them.
  install_fla
  acc=/tmp/accuracy; mkdir -p "$acc/fixtures" "$out/accuracy"
  for dt in bf16 fp16 fp32; do
    $B/larc fixtures gen --mechanism gdn --dtype $dt --shape 1,4096,4,128,128 --seed 11 \
      --out "$acc/fixtures/gdn_${dt}_T4096.safetensors" > /dev/null &
  done
  wait
  # FLA's chunk kernel on bf16 and fp16 (on fp32 inputs it computes in TF32: ../shared/anchors/README.md),
  # by tools/fla_diff.py, whose candidates larc diff judges again here for its JSON report.
  PYTHONPATH=/tmp/site timeout 100 python3 tools/fla_diff.py "$acc"/fixtures/gdn_bf16_*.safetensors \
    "$acc"/fixtures/gdn_fp16_*.safetensors --out "$acc/fla" > "$out/accuracy/fla.txt" 2>&1
  echo "fla outputs: exit $?"
  for c in "$acc"/fla/*.safetensors; do
    name=$(basename "$c" .safetensors)  # <fixture>.<FLA function>
    $B/larc diff "$acc/fixtures/${name%%.*}.safetensors" "$c" --kernel "fla.${name#*.}" --json "$out/accuracy/diff_$name.json" \
      > "$out/accuracy/diff_$name.txt" 2>&1
  done
  KERNELS='^gdn-(fused-recurrent|chunked|chunked-io)$'
  acc_subjects=(); for s in $(gpu_subjects); do acc_subjects+=(--subject "$s"); done
  $B/larc gate "${acc_subjects[@]}" --no-grid --random 0 --fixtures "$acc/fixtures" --json "$out/accuracy/larc.json" \
    > "$out/accuracy/larc.txt" 2>&1; echo "larc on the fixtures: exit $?"
  python3 tools/h200/accuracy_table.py "$out/accuracy/larc.json" "$out"/accuracy/diff_*.json --markdown "$out/accuracy.md"
  cat "$out/accuracy.md"
  ;;&
grades)
  # Precision grades and profiles (and the GPU tests beside them): FLA's GDN kernels (chunk and fused
  # recurrent) on GDN fixtures with a random initial state, judged at io:tf32-truncated (Triton feeds
  # fp32 registers to TF32 tensor cores unconverted; io for bf16/fp16 inputs) with the grade met per output
  # (docs/gate.md "Precision grades"); and profiles of larc's GDN/KLA kernels, each chunked kernel's
  # profile judging the fused recurrent kernel of the same mechanism (another algorithm: an honest
  # change, for k_reg's false-alarm rate on the device).
  install_fla
  run_tests > "$out/tests.txt" 2>&1 &
  g=/tmp/grades; mkdir -p "$g/fixtures" "$out/grades"
  for dt in bf16 fp16 fp32; do
    for T in 256 1024; do
      for seed in 1 2 3; do
        $B/larc fixtures gen --mechanism gdn --dtype $dt --shape 1,$T,2,64,64 --seed $seed --knob initial_state=2 \
          --out "$g/fixtures/fla_gdn_h0_${dt}_T${T}_s$seed.safetensors" > /dev/null &
      done
    done
  done
  wait
  PYTHONPATH=/tmp/site timeout 420 python3 tools/fla_diff.py "$g/fixtures" fixtures/golden/fla_gdn_bf16_T256.safetensors \
    fixtures/golden/fla_gdn_fp32_T128.safetensors fixtures/golden/gdn_h0_bf16_T100.safetensors \
    fixtures/golden/gdn_h0_fp32_T100.safetensors --out "$g/fla" --larc $B/larc --grade io:tf32-truncated \
    --report "$out/fla_diff_grades.md" > "$out/grades/fla.txt" 2>&1
  echo "FLA at io:tf32-truncated: exit $?"; tail -2 "$out/grades/fla.txt"
  profile_shapes=(--shape 1,1024,2,64,64 --shape 1,1000,2,128,128 --shape 2,300,2,32,32)
  for m in gdn kla; do
    for knobs in "" "--knob decay_max=0.01"; do
      tag=$m${knobs:+_weak_decay}
      timeout 200 $B/larc gate --subject $m-chunked --mechanism $m "${profile_shapes[@]}" $knobs --jobs "$jobs" \
        --record-profile "$g/profile_$tag.json" > "$out/grades/record_$tag.txt" 2>&1
      echo "record $tag: exit $?"
      timeout 200 $B/larc gate --subject $m-fused-recurrent --mechanism $m "${profile_shapes[@]}" $knobs --jobs "$jobs" \
        --against "$g/profile_$tag.json" --profile-subject $m-chunked --json "$out/grades/against_$tag.json" \
        > "$out/grades/against_$tag.txt" 2>&1
      echo "fused recurrent against the chunked profile, $tag: exit $?"; tail -1 "$out/grades/against_$tag.txt"
    done
  done
  python3 - "$out"/grades/against_*.json > "$out/profiles.md" <<'PY'
import json, sys
print("| report | kernel | output | cases | worst profile ratio (k_reg 2) | largest error growth |")
print("|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    worst = {}
    for r in json.load(open(path))["results"]:
        for o in r["outputs"]:
            w = worst.setdefault((r["kernel"], o["output"]), [0, 0.0, 0.0])
            w[0] += 1
            w[1] = max(w[1], o.get("profile_ratio", 0))
            w[2] = max(w[2], o.get("profile_growth", 0))
    for (kernel, output), (n, ratio, growth) in sorted(worst.items()):
        print(f"| {path.split('/')[-1]} | {kernel} | {output} | {n} | {ratio:.3g} | {growth:.3g} |")
PY
  cat "$out/profiles.md"
  wait
  cat "$out/tests.txt" | cut -c1-400
  ;;
variants)
  # k_reg's false-alarm rate on honest launch changes (docs/gate.md "Accuracy-regression profiles"): each
  # fused recurrent kernel's profile, recorded on T = 1, 65, 1000 × K = V = 32, 64, 96, 128 in every dtype,
  # judges its wide-k launch variant (the same kernel summing K in other runs), under default knobs, weak
  # decay (where the mechanism decays) and the edge regimes with a random initial state.
  g=/tmp/variants; mkdir -p "$g" "$out/variants"
  vshapes=(); for T in 1 65 1000; do for D in 32 64 96 128; do vshapes+=(--shape "1,$T,2,$D,$D"); done; done
  for m in la deltanet gdn kla gla; do
    for knobs in "" "--knob decay_max=0.01" "--knob entries=1 --knob key_set=1 --knob initial_state=2"; do
      tag=$m$( [ -n "$knobs" ] && echo "_$(echo $knobs | tr -dc 'a-z0-9_=.' | cut -c1-30)" )
      common=(--mechanism $m "${vshapes[@]}" --jobs "$jobs")
      timeout 60 $B/larc gate --subject $m-fused-recurrent "${common[@]}" $knobs --record-profile "$g/$tag.json" \
        > "$out/variants/record_$tag.txt" 2>&1
      echo "record $tag: exit $?"
      timeout 60 $B/larc gate --subject $m-fused-recurrent-wide-k "${common[@]}" $knobs --against "$g/$tag.json" \
        --profile-subject $m-fused-recurrent --json "$out/variants/against_$tag.json" > "$out/variants/against_$tag.txt" 2>&1
      echo "wide-k against the profile, $tag: exit $?"; tail -1 "$out/variants/against_$tag.txt"
    done
  done
  python3 - "$out"/variants/against_*.json > "$out/variants.md" <<'PY'
import json, sys
print("| report | output | cases | failing | worst profile ratio (k_reg 2) | largest error growth |")
print("|---|---|---|---|---|---|")
total = failing = 0
for path in sys.argv[1:]:
    worst = {}
    for r in json.load(open(path))["results"]:
        total += 1
        failing += not r["pass"]
        for o in r["outputs"]:
            w = worst.setdefault(o["output"], [0, 0, 0.0, 0.0])
            w[0] += 1
            w[1] += o.get("profile_ratio", 0) > 1
            w[2] = max(w[2], o.get("profile_ratio", 0))
            w[3] = max(w[3], o.get("profile_growth", 0))
    for output, (n, bad, ratio, growth) in sorted(worst.items()):
        print(f"| {path.split('/')[-1]} | {output} | {n} | {bad} | {ratio:.3g} | {growth:.3g} |")
print(f"\n{failing} of {total} cases fail (any output, any criterion).")
PY
  tail -25 "$out/variants.md"
  ;;
regimes)
  # The case vocabulary's edge regimes (docs/gate.md "Edge regimes") over every GPU kernel, on the grid's
  # shapes up to T = 1000: heavy-tailed entries with orthonormal keys, exact g = 0 on a quarter of the
  # tokens and a random initial state; heavy-tailed keys with g = −∞ on an eighth of the tokens; β ∈ [1, 2]
  # for the delta rules. A knob applies to the mechanisms that have it.
  edge1="--knob entries=1 --knob key_set=1 --knob zero_decay_fraction=0.25 --knob initial_state=2"
  edge2="--knob key_set=2 --knob hard_decay_fraction=0.125"
  steep="--knob beta_lo=1 --knob beta_hi=2 --mechanism gdn --mechanism deltanet --mechanism ccq-gdn"
  GATE_KNOBS=$edge1 gate_group edge1-T1-65 150 $(grid 1 63 64 65)
  GATE_KNOBS=$edge2 gate_group edge2-T1-65 150 $(grid 1 63 64 65)
  GATE_KNOBS=$steep gate_group steep-beta-T1-65 90 $(grid 1 63 64 65)
  GATE_KNOBS=$edge1 gate_group edge1-T1000 100 $(grid 1000)
  GATE_KNOBS=$edge2 gate_group edge2-T1000 100 $(grid 1000)
  python3 tools/h200/join_gate_reports.py --device "$card" "$out"/gate_*.json --json "$out/gate_regimes.json" \
    --markdown "$out/gate_regimes.md" | tail -30
  ;;
vocabulary)
  # The case vocabulary's read scale and initial states (docs/gate.md "What a case is") over every GPU
  # kernel: scale_factor 4 and 1/8 (kernels without a scale are not planned for them), a random initial
  # state for la-ratio (memory and normaliser) and VLA (whose kernels take none), and random cases, which
  # draw every knob. Then the gate's throughput (gate_throughput).
  scaled="--mechanism gdn --mechanism deltanet --mechanism kla --mechanism la --mechanism gla --mechanism ccq-gla --mechanism ccq-gdn"
  GATE_KNOBS="--knob scale_factor=4 $scaled" gate_group scale4-T1-65 40 $(grid 1 63 64 65)
  GATE_KNOBS="--knob scale_factor=0.125 --knob initial_state=2 --mechanism gdn --mechanism deltanet --mechanism kla --mechanism la --mechanism gla" \
    gate_group scale8th-h0-T1000 40 $(grid 1000)
  GATE_KNOBS="--knob initial_state=2 --mechanism la-ratio --mechanism vla" gate_group h0-ratio-vla 30 $(grid 1 64 65 1000)
  # Value heads grouped over the query/key heads (FLA's GVA): H = 2, HV = 8, with a random initial state
  # and a scale; the kernels without groups are not planned for them.
  gva=$(for T in 1 64 65 1000; do for D in 64 128 96; do echo "1,$T,2,$D,$D,8"; done; done)
  GATE_KNOBS="--knob initial_state=2 --knob scale_factor=2 --mechanism gdn --mechanism deltanet --mechanism kla" \
    gate_group gva-h0-T1-1000 40 $gva
  timeout 40 $B/larc gate "${subject_args[@]}" --jobs "$jobs" --no-grid --random 150 --seed 20 \
    --json "$out/gate_random.json" --markdown "$out/gate_random.md" > "$out/gate_random.txt" 2>&1
  echo "gate random: exit $?"; tail -3 "$out/gate_random.txt"
  python3 tools/h200/join_gate_reports.py --device "$card" "$out"/gate_*.json --json "$out/gate_vocabulary.json" \
    --markdown "$out/gate_vocabulary.md" | tail -20
  gate_throughput
  ;;
throughput)
  gate_throughput
  ;;
ncu)
  # Nsight Compute's speed of light, occupancy, launch statistics and warp states of the first NCU_LAUNCHES
  # kernels of the benchmark rows NCU_FILTER (a --benchmark_filter regex) picks, clocks left as they are;
  # NCU_KERNELS, a regex on the kernels' function names, leaves out the rest (the rows' input fills).
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  names=()
  [ -n "${NCU_KERNELS:-}" ] && names=(--kernel-name-base function --kernel-name "regex:$NCU_KERNELS")
  LD_LIBRARY_PATH=$B/lib timeout "${NCU_LIMIT:-240}" "$ncu" --clock-control none --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats --launch-count "${NCU_LAUNCHES:-40}" "${names[@]}" \
    $B/gpu_kernels_bench --benchmark_filter="$NCU_FILTER" --benchmark_min_time=0.001 --benchmark_repetitions=1 \
    > "$out/ncu.txt" 2>&1
  echo "ncu: exit $?"
  # ncu exits 0 when the filter matched no row or no kernel: say so (gpu_kernels_bench's rows end in
  # "/min_time:…", so an NCU_FILTER anchored with $ after the row's name matches nothing).
  if grep -qE "Failed to match any benchmarks|No kernels were profiled" "$out/ncu.txt"; then
    echo "ncu: nothing profiled (NCU_FILTER='$NCU_FILTER', NCU_KERNELS='${NCU_KERNELS:-}'):"; grep -E "Failed to match|No kernels" "$out/ncu.txt"
  fi
  grep -E "^  [a-z_]+.*\(|Duration  |Registers Per Thread|Achieved Occupancy|Executed Ipc Active|Compute \(SM\) Throughput|DRAM Throughput" \
    "$out/ncu.txt" | head -120
  ;;
python)
  # The larc Python package in-process (docs/python.md): examples/python gates FLA's chunk and fused
  # recurrent GDN, chunk GLA and chunk delta rule on CUDA tensors through pytest's larc plugin, and the
  # backward (grad=True, torch autograd) of the chunk and fused recurrent GDN, GLA and delta rule, on the
  # file's shapes plus random cases; every failure is saved as a fixture + candidate that `larc diff`
  # replays. The package and liblarc.so (with its qd/mpfr/gmp) come from the bundle: nothing is built here.
  install_fla
  # PYTEST_WORKERS=N spreads the cases over N pytest-xdist workers (the oracle is CPU work; the GPU is shared);
  # PYTEST_K=EXPR selects tests (pytest -k), e.g. PYTEST_K=backward for the gradient tests alone.
  # TRITON_CACHE_AUTOTUNING: a worker reuses the autotuning another worker finished (Triton's disk cache) rather
  # than tuning every FLA kernel again in each process. PYTEST_LIMIT bounds pytest's seconds (default 540); at the
  # limit pytest gets SIGINT, so that the JUnit file and --larc-json still hold the cases it finished (a kill
  # 30 s later if it does not stop).
  PYTHONPATH=$B/python:/tmp/site TRITON_CACHE_AUTOTUNING=1 timeout -s INT -k 30 "${PYTEST_LIMIT:-540}" python3 -m pytest examples/python \
    ${PYTEST_WORKERS:+-n $PYTEST_WORKERS} -p larc.pytest_plugin -p no:cacheprovider \
    ${PYTEST_K:+-k "$PYTEST_K"} --larc --larc-random "${LARC_RANDOM:-4}" --larc-save "$out/python_failures" --larc-json "$out/python_larc.json" \
    --junitxml "$out/python_junit.xml" -o junit_family=legacy -rfEs > "$out/python.txt" 2>&1
  echo "pytest --larc examples/python: exit $?"; tail -25 "$out/python.txt"
  # The device returns at most 16 MiB a file: saved failures over 2 MB (large cases) are listed and dropped; each
  # one's message in python.txt names the command that regenerates its fixture.
  find "$out/python_failures" -type f -size +2M -printf '%f %s bytes (dropped)\n' -delete 2>/dev/null > "$out/python_failures_dropped.txt"
  ;;
grad-io)
  # FLA's backward judged at the io grade for gradients (docs/gate.md "Precision grades", gradients): gradient
  # fixtures of the twins with an io form that FLA's backward runs on (deltanet: chunk_delta_rule and
  # fused_recurrent_delta_rule; gla: chunk_gla and fused_recurrent_gla; deltanet-qk-l2norm), with and without
  # a random initial state, both cotangents or dht alone; judged at io:tf32-truncated (io for bf16/fp16
  # inputs), every grade's ratio reported per output; FLA's outputs come back as candidates that `larc diff`
  # replays on any CPU against the same fixtures (regenerated there by the commands in fixtures.txt).
  # GRAD_IO=gla or GRAD_IO=deltanet runs one family's fixtures, GRAD_IO=gla-backward_fp32 one family's in one
  # dtype (a prefix of "<mechanism>_<dtype>": a fresh machine autotunes FLA's kernels again, minutes for
  # chunk_gla). Needs only larc and the package (LARC_BUNDLE_CPU=1).
  install_fla
  g=/tmp/gio; rm -rf "$g"; mkdir -p "$g/fixtures" "$out/grad_io"  # a warm machine keeps /tmp: no earlier call's fixtures
  gen() {
    case "$1_$2" in ${GRAD_IO:-*}*) ;; *) return ;; esac
    local cmd="larc fixtures gen --mechanism $1 --dtype $2 --shape $3 --seed $4 ${5:+$5} --out $1_$2_$(echo "$3" | tr , x)_s$4${6:+_$6}.safetensors"
    echo "$cmd" >> "$out/grad_io/fixtures.txt"
    (cd "$g/fixtures" && $B/$cmd > /dev/null)
  }
  for dt in bf16 fp16; do
    gen deltanet-backward $dt 1,256,2,64,64 1 "--knob initial_state=2" h0 &
    gen deltanet-backward $dt 2,300,4,64,64 2 &
    gen deltanet-backward $dt 1,512,2,128,128 3 "--knob initial_state=2 --knob cotangents=2" h0_dht &
    gen gla-backward $dt 1,256,2,64,64 1 "--knob initial_state=2" h0 &
    gen gla-backward $dt 2,300,4,64,64 2 &
  done
  gen gla-backward fp32 1,256,2,64,64 1 "--knob initial_state=2" h0 &
  gen gla-backward fp32 2,300,4,64,64 2 &
  gen deltanet-qk-l2norm-backward bf16 1,256,2,64,64 1 "--knob initial_state=2" h0 &
  wait
  PYTHONPATH=/tmp/site timeout "${GRAD_IO_LIMIT:-520}" python3 tools/fla_diff.py "$g/fixtures" --out "$out/grad_io/fla" --larc $B/larc \
    --grade io:tf32-truncated --report "$out/fla_diff_grad_io.md" > "$out/grad_io/fla.txt" 2>&1
  echo "FLA's backward at io:tf32-truncated: exit $?"; tail -4 "$out/grad_io/fla.txt"
  ;;
qk-l2norm)
  # FLA's chunk_gated_delta_rule and chunk_delta_rule with use_qk_l2norm_in_kernel=True on fixtures of the
  # raw-key mechanisms (gdn-qk-l2norm, deltanet-qk-l2norm; docs/gate.md "Raw queries and keys"): the plain
  # norm range, tiny norms (1e-4 to 1e-2, where ε matters) and a random initial state; forwards in every dtype
  # FLA takes, backwards (FLA's autograd) in bf16; judged at io:tf32-truncated (io for bf16/fp16 inputs) with
  # the grade met per output.
  install_fla
  g=/tmp/qk; mkdir -p "$g/fixtures" "$out/qk_l2norm"
  gen() { $B/larc fixtures gen --mechanism "$1" --dtype "$2" --shape "$3" --seed "$4" ${5:+$5} \
    --out "$g/fixtures/$1_$2_$(echo "$3" | tr , x)_s$4${6:+_$6}.safetensors" > /dev/null; }
  for dt in bf16 fp16 fp32; do
    for seed in 1 2; do
      gen gdn-qk-l2norm $dt 1,512,2,64,64 $seed "--knob initial_state=2" &
      gen gdn-qk-l2norm $dt 1,300,2,128,128 $seed "--knob qk_norm_lo=1e-4 --knob qk_norm_hi=1e-2" tiny &
    done
    wait
  done
  for dt in bf16 fp16; do
    gen deltanet-qk-l2norm $dt 1,512,2,64,64 1 "--knob initial_state=2" &
    gen deltanet-qk-l2norm $dt 1,300,2,128,128 1 "--knob qk_norm_lo=1e-4 --knob qk_norm_hi=1e-2" tiny &
  done
  gen deltanet-qk-l2norm-backward bf16 1,256,2,64,64 1 "--knob initial_state=2" &
  gen gdn-qk-l2norm-backward bf16 1,256,2,64,64 1 "--knob initial_state=2" &
  wait
  PYTHONPATH=/tmp/site timeout 500 python3 tools/fla_diff.py "$g/fixtures" --out "$g/fla" --larc $B/larc \
    --grade io:tf32-truncated --report "$out/fla_diff_qk_l2norm.md" > "$out/qk_l2norm/fla.txt" 2>&1
  echo "FLA with in-kernel l2norm at io:tf32-truncated: exit $?"; tail -4 "$out/qk_l2norm/fla.txt"
  ;;
torch)
  # larc's own kernels called from torch (larc.gpu: python/tests/test_gpu.py, liblarc_gpu.so from the
  # bundle) gated in-process, planted defects around them, streams; beside them the GPU tests and the
  # gate's default grid over every GPU kernel, as a check of the tree the bundle was built from.
  run_tests > "$out/tests.txt" 2>&1 &
  timeout 300 $B/larc gate "${subject_args[@]}" --jobs "$jobs" --random 8 --json "$out/gate_small.json" \
    --markdown "$out/gate_small.md" > "$out/gate_small.txt" 2>&1 &
  PYTHONPATH=$B/python timeout 400 python3 -m pytest python/tests/test_gpu.py -p no:cacheprovider -rfEs \
    --junitxml "$out/torch_junit.xml" -o junit_family=legacy > "$out/torch.txt" 2>&1
  echo "pytest python/tests/test_gpu.py: exit $?"; tail -8 "$out/torch.txt"
  wait
  echo "gate (default grid + 8 random): $(tail -1 "$out/gate_small.txt")"; cat "$out/tests.txt"
  ;;
backward)
  # The backward kernels (every *-backward GPU subject; docs/gpu-kernels/delta-rule.md "Fused recurrent
  # backward") under the gradient gate (docs/gate.md "Gradient cases"): their GPU tests, compute-sanitizer,
  # the gate's grid T ∈ {1, 63, 64, 65} × D ∈ {64, 128, 96} in every dtype with both cotangents, do only,
  # dht only and a random initial state, T = 1000 with one, grouped value heads (HV = 4H) and random
  # cases. The recorded fuzz cases (gpu_recorded_cases_test, all gradient cases) run with the GPU tests.
  # The groups' time limits allow for GDN's and KLA's rounding-draw baselines (about 1.8x a case's time).
  subject_args=(); for s in $(gpu_subjects | grep -- '-backward'); do subject_args+=(--subject "$s"); done
  (export GTEST_FILTER=${BACKWARD_TESTS:-'*backward*:*Backward*:*GpuRecordedCases*'}; run_tests) > "$out/tests.txt" 2>&1 &
  start_sanitizers 240 --knob initial_state=2
  gate_group T1-65 180 $(grid 1 63 64 65)
  GATE_KNOBS="--knob cotangents=1 --knob initial_state=2" gate_group do-only-h0-T1-65 150 $(grid 1 63 64 65)
  GATE_KNOBS="--knob cotangents=2 --knob initial_state=2" gate_group dht-only-h0-T1-65 150 $(grid 1 63 64 65)
  GATE_KNOBS="--knob initial_state=2" gate_group h0-T1000 180 $(grid 1000)
  gva=$(for T in 1 65 1000; do for D in 64 128; do echo "1,$T,2,$D,$D,8"; done; done)
  GATE_KNOBS="--knob initial_state=2 --knob scale_factor=2 --mechanism gdn-backward --mechanism deltanet-backward --mechanism kla-backward" \
    gate_group gva-h0 150 $gva
  timeout 150 $B/larc gate "${subject_args[@]}" --jobs "$jobs" --no-grid --random 100 --seed 22 \
    --json "$out/gate_random.json" --markdown "$out/gate_random.md" > "$out/gate_random.txt" 2>&1
  echo "gate random: exit $?"; tail -3 "$out/gate_random.txt"
  wait
  python3 tools/h200/join_gate_reports.py --device "$card" "$out"/gate_*.json --json "$out/gate.json" --markdown "$out/gate.md" | tail -30
  cut -c1-400 "$out/tests.txt"
  sanitizer_report "the backward kernels" "every backward GPU subject (random initial state)" "backward" > "$out/sanitizers.md"
  cat "$out/sanitizers.md"
  ;;
backward-bench)
  # The backward kernels' speed beside their forward kernels and FLA's delta-rule and GLA backward (whose
  # first calls autotune for minutes: a device call of its own).
  LD_LIBRARY_PATH=$B/lib timeout 150 $B/gpu_kernels_bench \
    --benchmark_filter="${BENCH_FILTER:-^((la|deltanet|gdn|kla|gla)-fused-recurrent|(gdn|kla)-chunked)(-backward(-io)?)?/prefill}" \
    --benchmark_repetitions=3 --benchmark_min_time=0.1 --benchmark_report_aggregates_only=true --benchmark_format=json \
    --benchmark_out="$out/bench_kernels.json" > "$out/bench_kernels.txt" 2>&1
  echo "bench: exit $?"
  install_fla
  # BENCH_PEERS=fla-chunk-delta-rule skips chunk_gla (whose first call autotunes for minutes).
  PYTHONPATH=/tmp/site timeout "${PEERS_TIMEOUT:-400}" python3 tools/h200/bench_peers.py --backward-only \
    --backward-peers "${BENCH_PEERS:-fla-chunk-delta-rule,fla-chunk-gla}" --out "$out/bench_peers.json" > "$out/bench_peers.txt" 2>&1
  echo "peers: exit $?"; tail -8 "$out/bench_peers.txt"
  python3 tools/h200/bench_backward.py --kernels "$out/bench_kernels.json" --peers "$out/bench_peers.json" \
    --tree-hash "$LARC_TREE_HASH" --markdown "$out/bench.md" --json "$out/bench.json"
  cat "$out/bench.md"
  ;;
decode-bench)
  # The decode target's rows (bench_report.py DECODE_KINDS): each fused recurrent kernel's one-launch step and
  # its multi-step decode graph (docs/gpu-kernels/delta-rule.md, "Multi-step decode"), beside FLA's decode step.
  LD_LIBRARY_PATH=$B/lib timeout 150 $B/gpu_kernels_bench \
    --benchmark_filter="${DECODE_FILTER:-^(la|deltanet|gdn|kla|gla)-fused-recurrent(-decode-graph)?/decode}" \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=json \
    --benchmark_out="$out/bench_kernels.json" > "$out/bench_kernels.txt" 2>&1
  echo "bench: exit $?"
  install_fla
  PYTHONPATH=/tmp/site timeout 120 python3 tools/h200/bench_peers.py --decode-only --out "$out/bench_peers.json" \
    > "$out/bench_peers.txt" 2>&1
  echo "peers: exit $?"; tail -3 "$out/bench_peers.txt"
  python3 tools/h200/bench_report.py --kernels "$out/bench_kernels.json" --peers "$out/bench_peers.json" \
    --tree-hash "$LARC_TREE_HASH" --json "$out/bench.json" --markdown "$out/bench.md" | tail -70
  ;;
fuzz2)
  # One campaign over every GPU kernel, sharded through the shard environment (GTEST_SHARD_INDEX /
  # GTEST_TOTAL_SHARDS): shard i runs its kernels on GPU i mod (GPU count), so the shards spread over
  # the GPUs without a scheduler; the oracle is CPU work, so there are more shards than GPUs.
  n=$(( $(nproc) - 2 )); [ $n -gt 24 ] && n=24
  for i in $(seq 0 $((n - 1))); do
    GTEST_SHARD_INDEX=$i GTEST_TOTAL_SHARDS=$n timeout 400 $B/larc fuzz "${subject_args[@]}" --minutes "${FUZZ_MINUTES:-5}" --seed 7 \
      --corpus "$out/corpus" --json "$out/fuzz_shard$i.json" > "$out/fuzz_shard$i.txt" 2>&1 &
  done
  wait
  $B/larc merge "$out"/fuzz_shard*.json --json "$out/fuzz.json" --markdown "$out/fuzz.md" > "$out/merge.txt" 2>&1
  echo "merge: exit $?"; tail -3 "$out/merge.txt"; cat "$out"/fuzz_shard*.txt | grep -h "runs its GPU" | sort | uniq -c
  # The merged report has a row per case (hundreds of MB): what is kept is its summary with every failure.
  python3 tools/h200/fuzz_summary.py "$out/fuzz.json" --markdown "$out/fuzz_summary.md" --json "$out/fuzz_summary.json" &&
    rm -f "$out"/fuzz.json "$out"/fuzz.md "$out"/fuzz_shard*.json  # kept when the summary fails
  ;;
esac
# The device tool returns at most 8 files: the reports themselves, and everything (logs, shard reports,
# test XML) in one archive.
tar -czf /tmp/everything.tar.gz -C "$out" . && rm -rf "$out"/* && tar -xzf /tmp/everything.tar.gz -C "$out" \
  --wildcards './gate.json' './gate.md' './sanitizers.md' './bench.json' './bench.md' './accuracy.md' './fuzz_summary.json' \
  './fuzz_summary.md' './fla_diff_grades.md' './profiles.md' './python_larc.json' './python_junit.xml' \
  './bench_backward.md' 2>/dev/null
mv /tmp/everything.tar.gz "$out/everything.tar.gz"

