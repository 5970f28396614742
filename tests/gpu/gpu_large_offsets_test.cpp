// Kernels index with 64-bit offsets (sizes past 2^31 elements): every kernel whose
// queries are [B,T,H,K] runs with q's second batch element placed 2^31 elements past the first (a
// batch stride of 2^31, 4 GiB of bf16), and must give bitwise the outputs of the compact layout.
// One test (one CTest entry) per such kernel, in its first dtype, e.g.
// Registry/GpuLargeOffsets.QueriesPastTwoToTheThirtyOneElementsIndexCorrectly/gdn_chunked_bf16.
// Skipped without a device.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

namespace {

using namespace larc::gpu_test;

constexpr std::int64_t kBatchStride = std::int64_t{1} << 31;

larc::gpu::Dtype gpu_dtype(Dtype d) {
  return d == Dtype::bf16 ? larc::gpu::Dtype::bf16 : d == Dtype::fp16 ? larc::gpu::Dtype::fp16 : larc::gpu::Dtype::fp32;
}

void require(const larc::gpu::Status& s) { ASSERT_TRUE(s.ok) << s.message; }

// Kernels whose queries are [B,T,H,K] (not varlen ones: their batch is one packed sequence).
bool has_batched_queries(const larc::gpu::Kernel& k) {
  if (k.limits.varlen) return false;
  for (const larc::harness::Mechanism& m : larc::harness::mechanisms())
    if (m.name == k.mechanism) return m.inputs.front().dims == "BTHK";
  return true;  // a mechanism the harness lacks: the test says so where it runs
}

class GpuLargeOffsets : public ::testing::TestWithParam<KernelDtype> {};

TEST_P(GpuLargeOffsets, QueriesPastTwoToTheThirtyOneElementsIndexCorrectly) {
  LARC_SKIP_WITHOUT_DEVICE();
  const auto found = gpu_subject(*GetParam().kernel);
  ASSERT_TRUE(found) << GetParam().kernel->name << " names a mechanism the harness lacks";
  const GpuSubject& g = *found;
  const Dtype dtype = harness_dtype(GetParam().dtype);
  const Shape s = shape_for(*g.kernel, 2, 8, 1, 16);
  const TensorMap inputs = inputs_for(*g.mechanism, s, dtype, 19);
  const TensorMap compact = run(g, s, dtype, inputs);

  std::vector<larc::gpu::DeviceBuffer> buffers;
  larc::gpu::LaunchArgs args;
  larc::gpu::Status st;
  for (const auto& [name, t] : inputs) {
    larc::gpu::TensorView view{nullptr, gpu_dtype(t.dtype()), t.shape(), {}};
    if (name == "q") {
      const std::int64_t per_batch = s.T * s.H * s.K, es = static_cast<std::int64_t>(t.size_bytes() / t.size());
      buffers.push_back(larc::gpu::DeviceBuffer::allocate((kBatchStride + per_batch) * es, st));
      require(st);
      for (std::int64_t b = 0; b < s.B; ++b)
        require(larc::gpu::copy_to_device(static_cast<std::byte*>(buffers.back().get()) + b * kBatchStride * es,
                                          t.data() + b * per_batch * es, per_batch * es));
      view.strides = {kBatchStride, s.H * s.K, s.K, 1};
    } else {
      buffers.push_back(larc::gpu::DeviceBuffer::allocate(t.size_bytes(), st));
      require(st);
      require(larc::gpu::copy_to_device(buffers.back().get(), t.data(), t.size_bytes()));
    }
    view.data = buffers.back().get();
    args.inputs[name] = view;
  }
  TensorMap strided = larc::harness::poisoned_outputs(*g.mechanism, s, dtype);
  for (auto& [name, t] : strided) {
    buffers.push_back(larc::gpu::DeviceBuffer::allocate(t.size_bytes(), st));
    require(st);
    args.outputs[name] = {buffers.back().get(), gpu_dtype(t.dtype()), t.shape(), {}};
  }
  require(g.kernel->launch(args));
  require(larc::gpu::synchronize());
  for (auto& [name, t] : strided) {
    require(larc::gpu::copy_to_host(t.data(), args.outputs[name].data, t.size_bytes()));
    EXPECT_TRUE(bitwise_equal(t, compact.at(name)))
        << g.kernel->name << " output " << name << ": " << first_difference(t, compact.at(name));
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, GpuLargeOffsets, ::testing::ValuesIn(kernel_dtypes(true, has_batched_queries)),
                         kernel_dtype_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuLargeOffsets);

}  // namespace
