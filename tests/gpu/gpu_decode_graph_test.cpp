// Multi-step decode (larc/gpu/decode_graph.h; docs/gpu-kernels/delta-rule.md, "Multi-step decode"): for la,
// deltanet, gdn, kla and gla, the registered `*-fused-recurrent-decode-graph` kernel (T tokens as T
// graph-captured one-token steps) gives the fused recurrent kernel's o and final state bit for bit, at
// T = 1, 2, 33, batch × heads 1 and 132, K = V = 128 and a small K, V, with and without a final state;
// and a DecodeGraph of steps over slices of [B,N,H,·] buffers, updating one state in place, replays
// twice to the same bits, which are the one-launch kernel's over the N tokens. The oracle, batch
// invariance and the rest are the registry-wide tests' (gpu_kernels_test). Skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gpu_test_support.h"
#include "larc/gpu/api.h"
#include "larc/gpu/decode_graph.h"
#include "larc/harness/mechanism.h"

namespace {

using larc::gpu::DeviceBuffer;
using larc::gpu::LaunchArgs;
using larc::gpu::TensorView;
using larc::harness::Shape;
using GpuDtype = larc::gpu::Dtype;

void require(const larc::gpu::Status& s) { ASSERT_TRUE(s.ok) << s.message; }

// Values in each input's intended regime (unit-norm keys on average, log-decays in (−0.1, 0], steps in
// (0.1, 0.9)); initial states small.
void range_of(const std::string& name, std::int64_t K, float& lo, float& hi) {
  lo = -1.0f, hi = 1.0f;
  if (name == "k") hi = std::sqrt(3.0f / static_cast<float>(K)), lo = -hi;
  if (name == "g" || name == "gk") lo = -0.1f, hi = 0.0f;
  if (name == "beta" || name == "eta") lo = 0.1f, hi = 0.9f;
  if (name == "initial_state") lo = -0.1f, hi = 0.1f;
}

// Device tensors of one launch of a mechanism's kernels on shape s: its required inputs in `dtype`
// (seeded fills), an fp32 initial state, o and (with_final_state) the final state.
struct DeviceLaunch {
  std::vector<DeviceBuffer> owned;
  LaunchArgs args;

  DeviceLaunch(const std::string& mechanism, const Shape& s, GpuDtype dtype, bool with_final_state, std::uint64_t seed) {
    const auto& m = larc::harness::find_mechanism(mechanism);
    auto add = [&](larc::gpu::Tensors& to, const std::string& name, const std::string& dims, GpuDtype dt, bool fill) {
      TensorView v{nullptr, dt, larc::harness::dims_of(dims, s), {}};
      larc::gpu::Status st;
      owned.push_back(DeviceBuffer::allocate(static_cast<std::size_t>(v.numel()) * larc::gpu::dtype_bytes(dt), st));
      EXPECT_TRUE(st.ok) << st.message;
      v.data = owned.back().get();
      if (fill && st.ok) {
        float lo, hi;
        range_of(name, s.K, lo, hi);
        EXPECT_TRUE(larc::gpu::fill_uniform(v, lo, hi, seed + owned.size()).ok);
      }
      to[name] = v;
    };
    for (const auto& spec : m.inputs)
      if (!spec.optional) add(args.inputs, spec.name, spec.dims, dtype, true);
    add(args.inputs, "initial_state", "BHKV", GpuDtype::fp32, true);
    add(args.outputs, "o", m.output("o").dims, dtype, false);
    if (with_final_state) add(args.outputs, "final_state", "BHKV", GpuDtype::fp32, false);
  }
};

std::vector<unsigned char> download(const TensorView& v) {
  std::vector<unsigned char> host(static_cast<std::size_t>(v.numel()) * larc::gpu::dtype_bytes(v.dtype));
  EXPECT_TRUE(larc::gpu::copy_to_host(host.data(), v.data, host.size()).ok);
  return host;
}

// Where two downloads first differ ("" when they are equal).
std::string first_difference(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return "byte " + std::to_string(i) + " of " + std::to_string(a.size());
  return "";
}

// Runs `k` on the launch's tensors (outputs poisoned with 0xff bytes first) and returns its outputs.
std::vector<std::vector<unsigned char>> outputs_of(const larc::gpu::Kernel& k, const DeviceLaunch& L) {
  for (const auto& [name, v] : L.args.outputs)
    EXPECT_TRUE(larc::gpu::fill_device(v.data, 0xff, static_cast<std::size_t>(v.numel()) * larc::gpu::dtype_bytes(v.dtype)).ok);
  const auto st = k.launch(L.args);
  EXPECT_TRUE(st.ok) << k.name << ": " << st.message;
  EXPECT_TRUE(larc::gpu::synchronize().ok);
  std::vector<std::vector<unsigned char>> out;
  for (const auto& [name, v] : L.args.outputs) out.push_back(download(v));
  return out;
}

class DecodeGraphKernels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LARC_SKIP_WITHOUT_DEVICE();
    one_launch = larc::gpu::find_kernel(GetParam() + "-fused-recurrent", GetParam());
    graph = larc::gpu::find_kernel(GetParam() + "-fused-recurrent-decode-graph", GetParam());
    ASSERT_NE(one_launch, nullptr);
    ASSERT_NE(graph, nullptr) << GetParam() << " has no decode-graph kernel";
    ASSERT_TRUE(larc::gpu::has_decode_graph(GetParam()));
  }
  const larc::gpu::Kernel* one_launch = nullptr;
  const larc::gpu::Kernel* graph = nullptr;
};

TEST_P(DecodeGraphKernels, TokensAsGraphStepsEqualTheFusedRecurrentKernelBitwise) {
  std::uint64_t seed = 100;
  for (const GpuDtype dtype : {GpuDtype::bf16, GpuDtype::fp32})
    for (const std::int64_t batch : {1, 132})
      for (const std::int64_t T : {1, 2, 33})
        for (const auto& [K, V] : std::vector<std::pair<std::int64_t, std::int64_t>>{{128, 128}, {5, 7}})
          for (const bool final_state : {true, false}) {
            const Shape s{batch, T, 1, K, V};
            const DeviceLaunch L(GetParam(), s, dtype, final_state, seed += 10);
            const auto want = outputs_of(*one_launch, L);
            const auto got = outputs_of(*graph, L);
            ASSERT_EQ(want.size(), got.size());
            for (std::size_t i = 0; i < want.size(); ++i)
              EXPECT_EQ(first_difference(want[i], got[i]), "")
                  << graph->name << " " << larc::gpu::dtype_name(dtype) << " shape " << s.str() << " output "
                  << (i == 0 && final_state ? "final_state" : "o");
          }
}

TEST_P(DecodeGraphKernels, StepsOnOneStateReplayToTheSameBitsAsOneLaunch) {
  const std::int64_t N = 33;
  const Shape s{132, N, 1, 128, 128};
  const DeviceLaunch L(GetParam(), s, GpuDtype::bf16, true, 7);
  const auto want = outputs_of(*one_launch, L);  // final_state, o: the one launch over the N tokens

  // The state the steps update in place, starting from the launch's initial state.
  const TensorView& h0 = L.args.inputs.at("initial_state");
  const std::vector<unsigned char> initial = download(h0);
  larc::gpu::Status st;
  DeviceBuffer state_buffer = DeviceBuffer::allocate(initial.size(), st);
  require(st);
  const TensorView state{state_buffer.get(), GpuDtype::fp32, h0.shape, {}};
  // Step t: every [B,N,H,·] tensor's token t as a [B,1,H,·] view; the state in and out.
  std::vector<LaunchArgs> steps;
  for (std::int64_t t = 0; t < N; ++t) {
    LaunchArgs step;
    for (const auto* group : {&L.args.inputs, &L.args.outputs})
      for (const auto& [name, v] : *group) {
        if (name == "initial_state" || name == "final_state") continue;
        TensorView token = v;
        token.strides = v.effective_strides();
        token.shape[1] = 1;
        token.data = static_cast<char*>(v.data) + t * token.strides[1] * static_cast<std::int64_t>(larc::gpu::dtype_bytes(v.dtype));
        (group == &L.args.inputs ? step.inputs : step.outputs)[name] = token;
      }
    step.inputs["initial_state"] = state;
    step.outputs["final_state"] = state;
    steps.push_back(step);
  }
  const larc::gpu::DecodeGraph g = larc::gpu::DecodeGraph::capture(GetParam(), steps, st);
  require(st);
  ASSERT_EQ(g.steps(), static_cast<std::size_t>(N));

  const TensorView& o = L.args.outputs.at("o");
  std::vector<std::vector<unsigned char>> replays;
  for (int replay = 0; replay < 2; ++replay) {
    require(larc::gpu::copy_to_device(state.data, initial.data(), initial.size()));
    require(larc::gpu::fill_device(o.data, 0xff, static_cast<std::size_t>(o.numel()) * larc::gpu::dtype_bytes(o.dtype)));
    require(g.replay(nullptr));
    require(larc::gpu::synchronize());
    replays.push_back(download(state));
    replays.push_back(download(o));
  }
  EXPECT_EQ(first_difference(replays[0], replays[2]), "") << "final state of two replays";
  EXPECT_EQ(first_difference(replays[1], replays[3]), "") << "o of two replays";
  EXPECT_EQ(first_difference(want[0], replays[0]), "") << "final state against the one launch";
  EXPECT_EQ(first_difference(want[1], replays[1]), "") << "o against the one launch";
}

TEST(DecodeGraphValidation, AStepOfMoreThanOneTokenAndAMechanismWithoutAGraphAreRefused) {
  larc::gpu::Status st;
  const auto none = larc::gpu::DecodeGraph::capture("la-ratio", {}, st);
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("no decode graph"), std::string::npos) << st.message;
  EXPECT_FALSE(larc::gpu::has_decode_graph("la-ratio"));
  LARC_SKIP_WITHOUT_DEVICE();  // validation runs inside the capture, which needs a device
  const DeviceLaunch L("gdn", Shape{2, 2, 1, 16, 16}, GpuDtype::bf16, true, 3);
  const auto refused = larc::gpu::DecodeGraph::capture("gdn", {L.args}, st);
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("T = 2"), std::string::npos) << st.message;
  EXPECT_EQ(refused.steps(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, DecodeGraphKernels, ::testing::Values("la", "deltanet", "gdn", "kla", "gla"));

}  // namespace
