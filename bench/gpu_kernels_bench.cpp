// Speed of every registered GPU kernel (docs/gpu.md, "Benchmarks"), timed with CUDA events around each launch
// (Google Benchmark manual time; report the median of the repetitions):
//   prefill: B = 1, H = 16, D = 128, T ∈ {2k, 8k, 32k} (VLA: 2^10 .. 2^17; chunked kernels: 2k, 8k,
//            32k, 64k, 128k), bf16, outputs only (no final state);
//   decode:  T = 1, batch × heads ∈ {16, 132, 1024} (B = batch × heads, H = 1), fp32 state in and out,
//            for kernels that take an initial state; the time per launch of 32 back-to-back launches;
//   decode-graph, decode-steps (the *-decode-graph kernels' mechanisms): the same steps, 32 of them
//            captured into one CUDA graph with programmatic dependent launches (larc/gpu/decode_graph.h)
//            and replayed, the time per step: decode-graph on the decode rows' rotated copies (only the
//            launch path differs from theirs), decode-steps as a real multi-step decode — every step its
//            own inputs, one state updated in place, which stays in L2 between steps where it fits.
// Inputs are made on the device (fill_uniform) in several copies that the iterations rotate through,
// so no iteration finds its inputs in the 50 MB L2 left by the previous one. Each row carries the
// bytes a launch must move at least (inputs read once, outputs written once), so the report can
// state the fraction of the bandwidth floor reached. Without a device every benchmark is skipped.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "larc/gpu/api.h"
#include "larc/gpu/decode_graph.h"
#include "larc/harness/mechanism.h"

namespace {

using larc::gpu::Dtype;
using larc::harness::Shape;

constexpr std::int64_t kRotateBytes = std::int64_t{256} << 20;  // ≥ 5× the H200's L2

// Value ranges that keep each mechanism in its intended regime (unit-norm-on-average keys, decays
// in (−0.1, 0], steps in (0, 1)).
void range_of(const std::string& name, std::int64_t K, float& lo, float& hi) {
  lo = -1.0f, hi = 1.0f;
  if (name == "k") hi = std::sqrt(3.0f / static_cast<float>(K)), lo = -hi;
  if (name == "g" || name == "gk") lo = -0.1f, hi = 0.0f;
  if (name == "beta" || name == "eta") lo = 0.1f, hi = 0.9f;
  if (name == "level_scales") lo = 0.5f, hi = 1.0f;
}

struct TensorSet {
  std::vector<larc::gpu::DeviceBuffer> buffers;
  larc::gpu::LaunchArgs args;
};

struct Workload {
  std::vector<TensorSet> sets;
  std::int64_t bytes_per_launch = 0;
  std::string error;
};

Workload make_workload(const larc::gpu::Kernel& k, const Shape& s, bool decode) {
  const auto& m = larc::harness::find_mechanism(k.mechanism);
  Workload w;
  auto add = [&](TensorSet& set, larc::gpu::Tensors& to, const std::string& name, const std::string& dims, Dtype dt,
                 bool input, std::uint64_t seed) {
    larc::gpu::TensorView v{nullptr, dt, larc::harness::dims_of(dims, s), {}};
    const std::size_t bytes = static_cast<std::size_t>(v.numel()) * larc::gpu::dtype_bytes(dt);
    larc::gpu::Status st;
    set.buffers.push_back(larc::gpu::DeviceBuffer::allocate(bytes, st));
    if (!st) w.error = st.message;
    v.data = set.buffers.back().get();
    float lo, hi;
    range_of(name, s.K, lo, hi);
    if (input && st) st = larc::gpu::fill_uniform(v, name == "initial_state" ? -0.1f : lo, name == "initial_state" ? 0.1f : hi, seed);
    if (!st) w.error = st.message;
    to[name] = v;
    if (w.sets.size() == 1) w.bytes_per_launch += static_cast<std::int64_t>(bytes);
  };
  std::int64_t set_bytes = 0;
  do {
    w.sets.emplace_back();
    TensorSet& set = w.sets.back();
    const std::uint64_t seed = 1000 * w.sets.size();
    std::uint64_t i = 0;
    // The required inputs (an optional one, the initial state or dht, is the decode rows' own): bf16 but
    // for those held in float32 whatever the case's dtype.
    for (const auto& spec : m.inputs)
      if (!spec.optional)
        add(set, set.args.inputs, spec.name, spec.dims, spec.always_fp32 ? Dtype::fp32 : Dtype::bf16, true, seed + ++i);
    for (const auto& spec : m.outputs)
      if (!spec.always_fp32 || decode) add(set, set.args.outputs, spec.name, spec.dims, spec.always_fp32 ? Dtype::fp32 : Dtype::bf16, false, 0);
    if (decode) add(set, set.args.inputs, "initial_state", "BHKV", Dtype::fp32, true, seed + ++i);
    if (w.sets.size() == 1) set_bytes = w.bytes_per_launch;
  } while (w.error.empty() && static_cast<std::int64_t>(w.sets.size()) * set_bytes < kRotateBytes && w.sets.size() < 64);
  return w;
}

// The row's workload made on the device; false (the row skipped with the reason) without a device or
// when making it failed.
bool make_or_skip(benchmark::State& state, const larc::gpu::Kernel& k, const Shape& s, bool decode, Workload& w) {
  if (!larc::gpu::query_devices().present) {
    state.SkipWithError("no CUDA device");
    return false;
  }
  w = make_workload(k, s, decode);
  if (w.error.empty()) w.error = larc::gpu::synchronize().message;
  if (!w.error.empty()) state.SkipWithError(w.error.c_str());
  return w.error.empty();
}

// Every iteration's time: `enqueues` calls of enqueue timed together, reported per step (`steps` a call).
void time_iterations(benchmark::State& state, const std::function<larc::gpu::Status()>& enqueue, int enqueues, int steps) {
  for (auto _ : state) {
    float ms = 0;
    const larc::gpu::Status st = larc::gpu::time_on_stream(enqueue, nullptr, 0, enqueues, &ms);
    if (!st) {
      state.SkipWithError(st.message.c_str());
      return;
    }
    state.SetIterationTime(ms / steps / 1e3);
  }
}

// The row's shape, its bytes a launch or step, and its label (the kernel and what is timed).
void describe_row(benchmark::State& state, const Shape& s, std::int64_t bytes, const std::string& label) {
  state.counters["T"] = static_cast<double>(s.T);
  state.counters["B"] = static_cast<double>(s.B);
  state.counters["H"] = static_cast<double>(s.H);
  state.counters["D"] = static_cast<double>(s.K);
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetLabel(label);
}

void run(benchmark::State& state, const larc::gpu::Kernel* k, Shape s, bool decode) {
  Workload w;
  if (!make_or_skip(state, *k, s, decode, w)) return;
  std::size_t next = 0;
  auto launch = [&] { return k->launch(w.sets[next++ % w.sets.size()].args); };
  for (std::size_t i = 0; i < w.sets.size(); ++i) launch();  // warm-up: every copy once
  // A decode step is one launch in a stream of them: decode rows time 32 back-to-back launches (each on
  // its own rotated copy) and report the time per launch, so the GPU's start-up of an isolated launch
  // (as long as the whole step at small batch × heads: docs/gpu.md, "Benchmarks") is not counted as
  // state traffic time.
  time_iterations(state, launch, decode ? 32 : 1, 1);  // time_on_stream reports per call
  describe_row(state, s, w.bytes_per_launch, k->name + (decode ? " decode" : " prefill"));
}

// The decode-graph rows: kGraphSteps steps of one graph per replay.
constexpr int kGraphSteps = 32;
enum class GraphSteps { rotated, one_state };

void run_graph(benchmark::State& state, const larc::gpu::Kernel* k, Shape s, GraphSteps steps) {
  Workload w;
  if (!make_or_skip(state, *k, s, true, w)) return;
  // Step i is a decode row's launch i: on rotated copy i, or (one_state) on its inputs and outputs but
  // with copy 0's initial state as every step's state, read and written in place.
  const larc::gpu::TensorView shared = w.sets[0].args.inputs.at("initial_state");
  std::vector<larc::gpu::LaunchArgs> args;
  for (int i = 0; i < kGraphSteps; ++i) {
    larc::gpu::LaunchArgs a = w.sets[static_cast<std::size_t>(i) % w.sets.size()].args;
    if (steps == GraphSteps::one_state) {
      a.inputs["initial_state"] = shared;
      a.outputs["final_state"] = shared;
    }
    args.push_back(std::move(a));
  }
  larc::gpu::Status st;
  const larc::gpu::DecodeGraph graph = larc::gpu::DecodeGraph::capture(k->mechanism, args, st);
  auto replay = [&] { return graph.replay(nullptr); };
  for (int i = 0; i < 2 && st; ++i) st = replay();  // warm-up
  if (st) st = larc::gpu::synchronize();
  if (!st) {
    state.SkipWithError(st.message.c_str());
    return;
  }
  time_iterations(state, replay, 1, kGraphSteps);
  describe_row(state, s, w.bytes_per_launch, k->name + (steps == GraphSteps::rotated ? " decode-graph" : " decode-steps"));
}

bool takes(const larc::gpu::Kernel& k, const Shape& s) {
  bool bf16 = false;
  for (Dtype d : k.dtypes) bf16 = bf16 || d == Dtype::bf16;
  const bool dims = k.limits.head_dims.empty() ||
                    std::find(k.limits.head_dims.begin(), k.limits.head_dims.end(), s.K) != k.limits.head_dims.end();
  return bf16 && dims && !k.limits.varlen && (k.limits.max_K == 0 || s.K <= k.limits.max_K) &&
         (k.limits.max_T == 0 || s.T <= k.limits.max_T);
}

void register_all() {
  for (const larc::gpu::Kernel& k : larc::gpu::kernels()) {
    // A *-decode-graph kernel's launch captures a graph of its T tokens: its mechanism's graph rows
    // capture once and replay, and it has no rows of its own.
    if (k.name.ends_with("-decode-graph")) {
      for (std::int64_t bh : {16, 132, 1024})
        for (const GraphSteps steps : {GraphSteps::rotated, GraphSteps::one_state}) {
          const char* kind = steps == GraphSteps::rotated ? "/decode-graph/BH=" : "/decode-steps/BH=";
          benchmark::RegisterBenchmark((k.name + kind + std::to_string(bh)).c_str(), run_graph, &k,
                                       Shape{bh, 1, 1, 128, 128}, steps)
              ->UseManualTime()
              ->Unit(benchmark::kMicrosecond)
              ->Iterations(200);  // × 32 steps each
        }
      continue;
    }
    // VLA-C10 (SPEC §1) places VLA's crossover with softmax attention near 43,000 tokens: VLA kernels
    // (vla-chunked too: its target is to beat SDPA from 16k) are timed over 2^10 .. 2^17 tokens; the
    // other chunked kernels at FLA's chunk GDN anchor lengths (../shared/anchors/README.md)
    // 2k .. 128k (the io-grade twins, *-chunked-io, too); the others at 2k, 8k, 32k.
    const bool chunked_forward = k.name.ends_with("-chunked") || k.name.ends_with("-chunked-io");
    std::vector<std::int64_t> lengths{2048, 8192, 32768};
    if (k.mechanism == "vla") lengths = {1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
    else if (chunked_forward) lengths = {2048, 8192, 32768, 65536, 131072};
    for (std::int64_t T : lengths) {
      const Shape s{1, T, 16, 128, 128};
      if (!takes(k, s)) continue;
      benchmark::RegisterBenchmark((k.name + "/prefill/T=" + std::to_string(T)).c_str(), run, &k, s, false)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.1);
    }
    // Chunked and backward kernels are prefill kernels.
    if (!k.limits.initial_state || chunked_forward || larc::harness::find_mechanism(k.mechanism).computes_gradients())
      continue;
    for (std::int64_t bh : {16, 132, 1024}) {
      const Shape s{bh, 1, 1, 128, 128};
      if (!takes(k, s)) continue;
      benchmark::RegisterBenchmark((k.name + "/decode/BH=" + std::to_string(bh)).c_str(), run, &k, s, true)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond)
          ->Iterations(200);  // × 32 launches each
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
