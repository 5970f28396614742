// Properties every registered GPU kernel must have, each checked over the whole
// registry so a new kernel is covered by adding its entry: it passes the gate's tolerance policy
// against the oracle on a small shape in every dtype it takes, at key dimensions 1, 3 and 5, with grouped
// value heads and with the case's read scale where its mechanism has them; a
// sequence's output does not depend on its batch neighbours; a launch over the first part of a
// sequence followed by one over the rest from the carried state equals one launch; 70,000 identical
// heads (more than 65,535 blocks) give the one-head result in every head. Value-parameterised over the
// registry: one test (one CTest entry) per kernel × dtype, e.g.
// Registry/GpuKernels.PassTheOracleOnASmallShape/gdn_chunked_bf16; the bitwise properties compare a
// kernel with itself, in its first dtype. Skipped without a device (CI); run on the H200.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu_test_support.h"

namespace {

using namespace larc::gpu_test;
using larc::harness::CaseSpec;

// g against the oracle on one case with the mechanism's default knobs but `knobs`: the gate's verdict
// must be pass.
void expect_passes(const GpuSubject& g, Dtype dtype, const Shape& shape, std::uint64_t seed,
                   const larc::harness::KnobValues& knobs = {}) {
  CaseSpec spec;
  spec.subject = g.kernel->name;
  spec.mechanism = g.kernel->mechanism;
  spec.dtype = dtype;
  spec.shape = shape;
  spec.seed = seed;
  spec.knobs = g.mechanism->resolve_knobs(knobs);
  const auto result = larc::harness::run_case(spec);
  std::string failures;
  for (const std::string& e : result.errors) failures += e + "\n";
  EXPECT_TRUE(result.pass) << spec.reproduce() << "\n" << failures;
}

TEST(GpuKernels, RegistryIsNotEmptyAndEveryKernelIsASubject) {
  LARC_SKIP_WITHOUT_DEVICE();
  EXPECT_FALSE(larc::gpu::kernels().empty());
  EXPECT_EQ(gpu_subjects().size(), larc::gpu::kernels().size()) << "a kernel names a mechanism the harness lacks";
}

// One kernel in one dtype; SetUp skips without a device and finds the kernel's subject.
class GpuKernels : public ::testing::TestWithParam<KernelDtype> {
 protected:
  void SetUp() override {
    LARC_SKIP_WITHOUT_DEVICE();
    const auto found = gpu_subject(*GetParam().kernel);
    ASSERT_TRUE(found) << GetParam().kernel->name << " names a mechanism the harness lacks";
    g = *found;
    dtype = harness_dtype(GetParam().dtype);
  }
  GpuSubject g{};
  Dtype dtype{};
};

// The bitwise properties: each kernel in its first dtype.
class GpuKernelsBitwise : public GpuKernels {};
// A launch continued from a carried state: the kernels that take an initial state, in their first dtype.
class GpuKernelsWithInitialState : public GpuKernels {};
// The same for the backward kernels: the gradient carried backwards across a cut.
class GpuBackwardKernels : public GpuKernels {};

// A case's inputs cut along T at `cut`: tokens [0, cut) and [cut, T); inputs without a T axis (states,
// the scale) go to both, an optional input the case leaves out to neither.
std::pair<TensorMap, TensorMap> split_at(const larc::harness::Mechanism& m, const TensorMap& inputs, std::int64_t cut,
                                         std::int64_t T) {
  std::pair<TensorMap, TensorMap> parts;
  for (const auto& spec : m.inputs) {
    if (!inputs.contains(spec.name)) continue;
    const int t = axis_of(spec.dims, 'T');
    parts.first[spec.name] = t < 0 ? inputs.at(spec.name) : slice(inputs.at(spec.name), t, 0, cut);
    parts.second[spec.name] = t < 0 ? inputs.at(spec.name) : slice(inputs.at(spec.name), t, cut, T);
  }
  return parts;
}

bool computes_gradients(const larc::gpu::Kernel& k) {
  for (const auto& m : larc::harness::mechanisms())
    if (m.name == k.mechanism) return m.computes_gradients();
  return false;
}

TEST_P(GpuKernels, PassTheOracleOnASmallShape) { expect_passes(g, dtype, shape_for(*g.kernel, 2, 65, 2, 32), 7); }

// Key dimensions far below the chunk length, across three chunks, for every kernel that takes them
// (vla-chunked takes K ≥ 16: below it its final state missed the tolerance, docs/gpu-kernels/vla.md).
TEST_P(GpuKernels, PassTheOracleAtSmallKeyDimensions) {
  for (std::int64_t d : {1, 3, 5}) {
    const Shape shape{2, 150, 2, d, d};
    if (larc::harness::limits_accept(g.subject->limits, shape)) expect_passes(g, dtype, shape, static_cast<std::uint64_t>(100 + d));
  }
}

// A key dimension that is no multiple of a register tile's side (4, 8 or 16): the last tile of keys is
// partial, where a loop over tiles or pivots must stop at K (vla-chunked's elimination runs its pivots in
// groups of the tile's side), for every kernel that takes it.
TEST_P(GpuKernels, PassTheOracleAtAnOddKeyDimension) {
  const Shape shape{1, 130, 2, 21, 19};
  if (!larc::harness::limits_accept(g.subject->limits, shape)) GTEST_SKIP() << "K = 21 outside the kernel's limits";
  expect_passes(g, dtype, shape, 21);
}

// Value heads grouped over the query/key heads (FLA's GVA), for the kernels of mechanisms that have them.
TEST_P(GpuKernels, PassTheOracleWithGroupedValueHeads) {
  Shape shape = shape_for(*g.kernel, 2, 65, 2, 32);
  shape.HV = 6;
  if (!g.mechanism->groups_value_heads() || !larc::harness::limits_accept(g.subject->limits, shape)) GTEST_SKIP() << "no grouped value heads";
  expect_passes(g, dtype, shape, 8);
}

// The case's own read scale (scale_factor 4 and 1/8), for the kernels that take one.
TEST_P(GpuKernels, PassTheOracleWithTheCasesScale) {
  const auto& knobs = g.mechanism->knobs;
  const bool has_scale = std::any_of(knobs.begin(), knobs.end(), [](const auto& k) { return k.name == larc::harness::kScaleFactorKnob; });
  if (!has_scale || !g.subject->limits.scale) GTEST_SKIP() << "no read scale";
  for (double factor : {4.0, 0.125})
    expect_passes(g, dtype, shape_for(*g.kernel, 2, 65, 2, 32), 9, {{larc::harness::kScaleFactorKnob, factor}});
}

TEST_P(GpuKernelsBitwise, BatchNeighboursDoNotChangeASequencesOutput) {
  const Shape batch = shape_for(*g.kernel, 3, 40, 2, 32);
  const TensorMap inputs = inputs_for(*g.mechanism, batch, dtype, 11);
  const TensorMap together = run(g, batch, dtype, inputs);
  TensorMap alone_inputs;
  for (const auto& spec : g.mechanism->inputs)
    if (inputs.contains(spec.name)) alone_inputs[spec.name] = slice(inputs.at(spec.name), axis_of(spec.dims, 'B'), 1, 2);
  Shape one = batch;
  one.B = 1;
  const TensorMap alone = run(g, one, dtype, alone_inputs);
  for (const auto& spec : g.mechanism->outputs) {
    if (!together.contains(spec.name)) continue;  // an optional output the case has none of (dinitial_level_states)
    const auto middle = slice(together.at(spec.name), axis_of(spec.dims, 'B'), 1, 2);
    EXPECT_TRUE(bitwise_equal(middle, alone.at(spec.name)))
        << g.kernel->name << " output " << spec.name << ": " << first_difference(middle, alone.at(spec.name));
  }
}

TEST_P(GpuKernelsWithInitialState, SplitSequenceWithCarriedStateEqualsOneLaunch) {
  const Shape full = shape_for(*g.kernel, 2, 100, 2, 32);
  // A chunked kernel cuts its sequence into chunks from each launch's first token (ShapeLimits::chunk):
  // only a cut on a chunk boundary repeats the whole launch's arithmetic, bit for bit.
  const std::int64_t cut = g.kernel->limits.chunk > 0 ? g.kernel->limits.chunk : 37;
  const TensorMap inputs = inputs_for(*g.mechanism, full, dtype, 13);
  const TensorMap whole = run(g, full, dtype, inputs);
  auto [first_in, second_in] = split_at(*g.mechanism, inputs, cut, full.T);
  Shape a = full, b = full;
  a.T = cut;
  b.T = full.T - cut;
  const TensorMap first = run(g, a, dtype, first_in);
  second_in["initial_state"] = first.at("final_state");
  if (first.contains("final_normalizer")) second_in["initial_normalizer"] = first.at("final_normalizer");  // la-ratio
  const TensorMap second = run(g, b, dtype, second_in);
  const auto tail = slice(whole.at("o"), axis_of(g.mechanism->output("o").dims, 'T'), cut, full.T);
  EXPECT_TRUE(bitwise_equal(tail, second.at("o"))) << g.kernel->name << ": " << first_difference(tail, second.at("o"));
  for (const auto& [name, state] : whole) {
    if (!name.starts_with("final_")) continue;
    EXPECT_TRUE(bitwise_equal(state, second.at(name)))
        << g.kernel->name << " " << name << ": " << first_difference(state, second.at(name));
  }
}

// The backward over [0, T) equals the backward over [s, T) from the forward kernel's state at s, whose
// dh0 is fed as dht to the backward over [0, s): the reverse recurrence carries nothing but ∂L/∂S across
// a cut, and its recomputed states are the forward kernel's bit for bit (the forward kernel: the name up
// to "-backward"; a chunked backward's cut on a chunk boundary).
TEST_P(GpuBackwardKernels, SplitSequenceWithCarriedStateGradientEqualsOneLaunch) {
  const std::string forward_name = g.kernel->name.substr(0, g.kernel->name.find("-backward"));
  const larc::gpu::Kernel* forward_kernel = larc::gpu::find_kernel(forward_name, g.mechanism->parameters.at("forward").get<std::string>());
  ASSERT_NE(forward_kernel, nullptr) << g.kernel->name << ": no forward kernel " << forward_name;
  const GpuSubject forward = *gpu_subject(*forward_kernel);
  const Shape full = shape_for(*g.kernel, 2, 100, 2, 32);
  const std::int64_t cut = g.kernel->limits.chunk > 0 ? g.kernel->limits.chunk : 37;
  const TensorMap inputs = inputs_for(*g.mechanism, full, dtype, 13);
  const TensorMap whole = run(g, full, dtype, inputs);
  auto [first_in, second_in] = split_at(*g.mechanism, inputs, cut, full.T);
  Shape a = full, b = full;
  a.T = cut;
  b.T = full.T - cut;
  TensorMap forward_in;
  for (const auto& spec : forward.mechanism->inputs)
    if (first_in.contains(spec.name)) forward_in[spec.name] = first_in.at(spec.name);
  second_in["initial_state"] = run(forward, a, dtype, forward_in).at("final_state");
  const TensorMap second = run(g, b, dtype, second_in);
  first_in["dht"] = second.at("dh0");
  const TensorMap first = run(g, a, dtype, first_in);
  for (const auto& spec : g.mechanism->outputs) {
    const int t = axis_of(spec.dims, 'T');
    const std::vector<std::pair<TypedTensor, TypedTensor>> pairs =
        t < 0 ? std::vector<std::pair<TypedTensor, TypedTensor>>{{whole.at(spec.name), first.at(spec.name)}}
              : std::vector<std::pair<TypedTensor, TypedTensor>>{{slice(whole.at(spec.name), t, 0, cut), first.at(spec.name)},
                                                                 {slice(whole.at(spec.name), t, cut, full.T), second.at(spec.name)}};
    for (const auto& [want, got] : pairs)
      EXPECT_TRUE(bitwise_equal(want, got)) << g.kernel->name << " " << spec.name << ": " << first_difference(want, got);
  }
}

TEST_P(GpuKernelsBitwise, SeventyThousandIdenticalHeadsGiveTheOneHeadResult) {
  const std::int64_t heads = 70000;  // B·H blocks > 65,535: the grid must not use gridDim.y/z for them
  const Shape one = shape_for(*g.kernel, 1, 3, 1, 16);
  const TensorMap inputs = inputs_for(*g.mechanism, one, dtype, 17);
  const TensorMap single = run(g, one, dtype, inputs);
  TensorMap tiled;
  for (const auto& spec : g.mechanism->inputs) {
    if (!inputs.contains(spec.name)) continue;
    const int h = head_axis(spec.dims);
    tiled[spec.name] = h < 0 ? inputs.at(spec.name) : tile(inputs.at(spec.name), h, heads);
  }
  Shape many = one;
  many.H = heads;
  const TensorMap out = run(g, many, dtype, tiled);
  for (const auto& spec : g.mechanism->outputs) {
    if (!out.contains(spec.name)) continue;  // an optional output the case has none of (dinitial_level_states)
    const int h = head_axis(spec.dims);
    // An output without a head axis sums over the heads (log-linear-backward's dq, dk of the q, k one head
    // shares with all): 70,000 identical heads make it 70,000 times the one-head sum, not that sum.
    if (h < 0) continue;
    for (std::int64_t head : {std::int64_t{0}, std::int64_t{65535}, std::int64_t{65536}, heads - 1}) {
      const auto got = slice(out.at(spec.name), h, head, head + 1);
      EXPECT_TRUE(bitwise_equal(got, single.at(spec.name)))
          << g.kernel->name << " output " << spec.name << " head " << head << ": "
          << first_difference(got, single.at(spec.name));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, GpuKernels, ::testing::ValuesIn(kernel_dtypes()), kernel_dtype_name);
INSTANTIATE_TEST_SUITE_P(Registry, GpuKernelsBitwise, ::testing::ValuesIn(kernel_dtypes(true)), kernel_dtype_name);
INSTANTIATE_TEST_SUITE_P(Registry, GpuKernelsWithInitialState,
                         ::testing::ValuesIn(kernel_dtypes(true, [](const larc::gpu::Kernel& k) {
                           return k.limits.initial_state && !computes_gradients(k);
                         })),
                         kernel_dtype_name);
INSTANTIATE_TEST_SUITE_P(Registry, GpuBackwardKernels,
                         ::testing::ValuesIn(kernel_dtypes(true, [](const larc::gpu::Kernel& k) {
                           return k.limits.initial_state && computes_gradients(k);
                         })),
                         kernel_dtype_name);

}  // namespace
