// Bad launches return clear errors (the bad-input matrix for the kernel
// launchers): for every registered kernel, a valid launch is built from its mechanism's tensor specs,
// then each tensor in turn is left out, given the wrong rank, a wrong size, the wrong dtype, a
// negative stride, a non-contiguous innermost stride, a misaligned or a null pointer; the launcher
// must refuse with a message naming the tensor and the problem. Value-parameterised over the
// registry: one test (one CTest entry) per kernel × dtype, e.g.
// Registry/GpuValidation.EveryMalformedTensorIsRefusedByName/gdn_chunked_bf16. Validation needs no
// device, so this runs in CI; where a device is present the valid launch runs on real (small) buffers.
#include <gtest/gtest.h>

#include <functional>

#include "gpu_test_support.h"
#include "larc/gpu/api.h"
#include "larc/harness/mechanism.h"

namespace {

using larc::gpu::Dtype;
using larc::gpu::Kernel;
using larc::gpu::LaunchArgs;
using larc::gpu::TensorView;
using larc::gpu_test::kernel_dtype_name;
using larc::gpu_test::kernel_dtypes;
using larc::gpu_test::KernelDtype;

struct Launch {
  LaunchArgs args;
  std::vector<larc::gpu::DeviceBuffer> owned;  // real buffers where a device is present
  std::vector<std::string> required;           // tensors the launch cannot do without
};

// The dimension letters of a tensor of k's mechanism ("" for tensors the mechanism does not list).
std::string spec_of(const Kernel& k, const std::string& name) {
  const auto& m = larc::harness::find_mechanism(k.mechanism);
  for (const auto* specs : {&m.inputs, &m.outputs})
    for (const auto& spec : *specs)
      if (spec.name == name) return spec.dims;
  return "";
}

// A valid launch of `k` in `dtype`: B = 2 (varlen: 1 batch of N = 2 sequences), T = 5, H = 3, K = V = 16
// or the kernel's first head dim, `value_heads` value heads (the W of the mechanism's tensors).
Launch valid_launch(const Kernel& k, Dtype dtype, bool device, std::int64_t value_heads = 3) {
  const auto& m = larc::harness::find_mechanism(k.mechanism);
  const std::int64_t d = k.limits.head_dims.empty() ? 16 : k.limits.head_dims.front();
  const larc::harness::Shape s{k.limits.varlen ? 1 : 2, 5, 3, d, d, value_heads};
  const larc::harness::Shape states{2, 5, 3, d, d, value_heads};
  Launch L;
  std::uintptr_t fake = 1 << 20;
  auto add = [&](larc::gpu::Tensors& to, const std::string& name, const std::vector<std::int64_t>& shape, Dtype dt) {
    TensorView v{nullptr, dt, shape, {}};
    const std::size_t bytes = static_cast<std::size_t>(v.numel()) * larc::gpu::dtype_bytes(dt);
    if (device) {
      larc::gpu::Status st;
      L.owned.push_back(larc::gpu::DeviceBuffer::allocate(bytes, st));
      EXPECT_TRUE(st.ok) << st.message;
      v.data = L.owned.back().get();
    } else {
      v.data = reinterpret_cast<void*>(fake);
      fake += (bytes + 4095) / 4096 * 4096 + 4096;
    }
    to[name] = v;
  };
  for (const auto& spec : m.inputs) {
    if (spec.optional) continue;  // the initial state: added below for the kernels that take one
    add(L.args.inputs, spec.name, larc::harness::dims_of(spec.dims, s), dtype);
    L.required.push_back(spec.name);
  }
  for (const auto& spec : m.outputs) {
    const bool state = spec.always_fp32;
    add(L.args.outputs, spec.name, larc::harness::dims_of(spec.dims, state ? states : s),
        state ? Dtype::fp32 : dtype);
    if (!state) L.required.push_back(spec.name);
  }
  if (k.limits.initial_state)  // per value head where the kernel groups them
    add(L.args.inputs, "initial_state", larc::harness::dims_of(k.limits.value_head_groups ? "BWKV" : "BHKV", states),
        Dtype::fp32);
  if (k.limits.varlen) {
    add(L.args.inputs, "cu_seqlens", {3}, Dtype::i64);
    L.required.push_back("cu_seqlens");
  }
  return L;
}

bool device_present() { return larc::gpu::query_devices().present; }

// Validation passed: on a device the launch succeeds; without one it fails only at the launch itself.
void expect_validation_passes(const Kernel& k, const Launch& L, bool device) {
  const auto st = k.launch(L.args);
  if (device) {
    EXPECT_TRUE(st.ok) << k.name << ": " << st.message;
    EXPECT_TRUE(larc::gpu::synchronize().ok);
  } else {
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("launch failed"), std::string::npos) << k.name << " refused a valid launch: " << st.message;
  }
}

void expect_refused(const Kernel& k, const LaunchArgs& args, const std::vector<std::string>& words, const std::string& what) {
  const auto st = k.launch(args);
  EXPECT_FALSE(st.ok) << k.name << " accepted " << what;
  for (const std::string& w : words)
    EXPECT_NE(st.message.find(w), std::string::npos)
        << k.name << ", " << what << ": the message does not say '" << w << "': " << st.message;
  EXPECT_EQ(st.message.find("launch failed"), std::string::npos) << k.name << ", " << what << " reached the launch";
  EXPECT_EQ(st.message.rfind(k.name, 0), 0u) << "the message does not start with the kernel's name: " << st.message;
}

// One kernel in one dtype.
class GpuValidation : public ::testing::TestWithParam<KernelDtype> {
 protected:
  const Kernel& k = *GetParam().kernel;
  const Dtype dtype = GetParam().dtype;
  const bool device = device_present();
};
// The kernels that take any head dimension (no list of head dims).
class GpuValidationAnyHeadDim : public GpuValidation {};
// The kernels with a smallest key dimension above 1.
class GpuValidationSmallestK : public GpuValidation {};
// The kernels that take grouped value heads (ShapeLimits::value_head_groups) of a mechanism that has them.
class GpuValidationGroupedValueHeads : public GpuValidation {};
bool takes_grouped_value_heads(const Kernel& k) {
  return k.limits.value_head_groups && larc::harness::find_mechanism(k.mechanism).groups_value_heads();
}

TEST(GpuValidation, RegistryIsNotEmpty) { ASSERT_FALSE(larc::gpu::kernels().empty()); }

TEST_P(GpuValidation, AcceptsItsValidLaunch) { expect_validation_passes(k, valid_launch(k, dtype, device), device); }

TEST_P(GpuValidation, EveryMalformedTensorIsRefusedByName) {
  std::size_t tried = 0;
  const Launch base = valid_launch(k, dtype, device);
  for (const bool is_input : {true, false}) {
    const auto& tensors = is_input ? base.args.inputs : base.args.outputs;
    for (const auto& [name, view] : tensors) {
      const std::string quoted = "'" + name + "'";
      auto mutated = [&](const std::function<void(TensorView&)>& change) {
        LaunchArgs a = base.args;
        change((is_input ? a.inputs : a.outputs).at(name));
        return a;
      };
      const bool required = std::find(base.required.begin(), base.required.end(), name) != base.required.end();
      if (required) {
        LaunchArgs a = base.args;
        (is_input ? a.inputs : a.outputs).erase(name);
        expect_refused(k, a, {quoted, "missing"}, name + " left out");
      }
      expect_refused(k, mutated([](TensorView& v) { v.shape.push_back(1); }), {quoted, "shape"}, name + " with one more dimension");
      expect_refused(k, mutated([](TensorView& v) { v.shape[0] = -1; }), {quoted, "negative"}, name + " with a negative size");
      // A wider last dimension is refused, though perhaps at the tensor that first disagrees with it;
      // level_scales may carry more than ⌈log2 T⌉ + 1 levels (the extra ones are never read, as in
      // the reference).
      const auto& spec_dims = spec_of(k, name);
      if (name != "q" && name != "cu_seqlens" && (spec_dims.empty() || spec_dims.back() != 'L'))
        expect_refused(k, mutated([](TensorView& v) { v.shape.back() += 1; }), {"shape"}, name + " one element too wide");
      const Dtype wrong = view.dtype == Dtype::i64 ? Dtype::fp32 : Dtype::i64;
      expect_refused(k, mutated([&](TensorView& v) { v.dtype = wrong; }), {quoted, "dtype"}, name + " in the wrong dtype");
      expect_refused(k, mutated([](TensorView& v) {
                       v.strides = v.effective_strides();
                       v.strides[0] = -v.strides[0];
                     }),
                     {quoted, "negative"}, name + " with a negative stride");
      if (view.shape.back() > 1)
        expect_refused(k, mutated([](TensorView& v) {
                         v.strides = v.effective_strides();
                         for (auto& st : v.strides) st *= 2;
                       }),
                       {quoted, "innermost"}, name + " with innermost stride 2");
      expect_refused(k, mutated([](TensorView& v) { v.data = static_cast<char*>(v.data) + 1; }), {quoted, "aligned"},
                     name + " misaligned by one byte");
      expect_refused(k, mutated([](TensorView& v) { v.data = nullptr; }), {quoted, "null"}, name + " with a null pointer");
      tried += 8;
    }
  }
  RecordProperty("malformed_launches_tried", static_cast<int>(tried));
}

// `args` with every K dimension of k's tensors set to K (the other sizes kept: a consistent launch).
LaunchArgs with_key_dimension(const Kernel& k, LaunchArgs args, std::int64_t K) {
  const auto& m = larc::harness::find_mechanism(k.mechanism);
  auto set_k = [K](larc::gpu::Tensors& group, const std::string& name, const std::string& dims) {
    if (!group.count(name)) return;
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (dims[i] == 'K') group.at(name).shape[i] = K;
  };
  for (const auto& spec : m.inputs) set_k(args.inputs, spec.name, spec.dims);
  for (const auto& spec : m.outputs) set_k(args.outputs, spec.name, spec.dims);
  set_k(args.inputs, "initial_state", "BHKV");
  return args;
}

TEST_P(GpuValidationAnyHeadDim, AZeroHeadDimensionIsRefused) {
  expect_refused(k, with_key_dimension(k, valid_launch(k, dtype, device).args, 0), {"K = 0"}, "K = 0");
}

// A kernel with a smallest K (vla-chunked: 16) refuses the K below it, naming K and the limit; the
// valid launch's K = 16 is its smallest.
TEST_P(GpuValidationSmallestK, AKeyDimensionBelowTheKernelsSmallestIsRefused) {
  const std::int64_t below = k.limits.min_K - 1;
  expect_refused(k, with_key_dimension(k, valid_launch(k, dtype, device).args, below),
                 {"K = " + std::to_string(below), "smallest", std::to_string(k.limits.min_K)},
                 "K = " + std::to_string(below));
}

TEST(GpuValidation, SomeKernelHasASmallestKeyDimension) {
  int kernels_with_a_smallest_k = 0;
  for (const Kernel& k : larc::gpu::kernels()) kernels_with_a_smallest_k += k.limits.min_K > 1;
  EXPECT_GE(kernels_with_a_smallest_k, 1);  // vla-chunked
}

// The chunked GDN and KLA kernels, forward and backward, run chunk_prepare, whose shared memory at K > 128
// passes the 227 KB a block may opt into for fp16 inputs (two bf16 terms of K and Kᵀ): they refuse such a
// K by name before anything is launched, and still take K = 128 (without a device, that launch fails only
// at the launch itself).
TEST(GpuValidation, ChunkedDeltaRuleKernelsRefuseAnFp16KeyDimensionBeyondChunkPreparesSharedMemory) {
  const bool device = device_present();
  int checked = 0;
  for (const Kernel& k : larc::gpu::kernels()) {
    if (!(k.name.starts_with("gdn-chunked") || k.name.starts_with("kla-chunked"))) continue;
    ++checked;
    expect_refused(k, with_key_dimension(k, valid_launch(k, Dtype::fp16, device).args, 200),
                   {"K = 200", "128", "fp16"}, "fp16 inputs with K = 200");
    if (!device) expect_validation_passes(k, [&] {
      Launch L = valid_launch(k, Dtype::fp16, false);
      L.args = with_key_dimension(k, L.args, 128);
      return L;
    }(), false);
  }
  EXPECT_EQ(checked, 16);  // gdn/kla, forward/backward, fp32/io grade, with and without varlen
}

// The kernels that group value heads (FLA's GVA) take W a multiple of H — H = 3, W = 6: two value heads
// read each query/key head — and refuse any other W by name, before anything is launched.
TEST_P(GpuValidationGroupedValueHeads, TakeAMultipleOfTheQueryKeyHeadsAndRefuseAnyOtherCount) {
  expect_validation_passes(k, valid_launch(k, dtype, device, 6), device);
  expect_refused(k, valid_launch(k, dtype, device, 4).args, {"value heads", "multiple"}, "W = 4 value heads with H = 3");
}

TEST_P(GpuValidation, AGridBeyondGridDimXIsRefusedWithoutLaunching) {
  if (device) GTEST_SKIP() << "checked where no launch can happen by mistake (CI)";
  LaunchArgs a = valid_launch(k, dtype, false).args;
  const auto& m = larc::harness::find_mechanism(k.mechanism);
  const std::int64_t heads = std::int64_t{1} << 32;
  auto widen = [&](larc::gpu::Tensors& group, const std::string& name, const std::string& dims) {
    const auto p = dims.find_first_of("HW");  // value heads too, = H here
    if (p != std::string::npos && group.count(name)) group.at(name).shape[p] = heads;
  };
  for (const auto& spec : m.inputs) widen(a.inputs, spec.name, spec.dims);
  for (const auto& spec : m.outputs) widen(a.outputs, spec.name, spec.dims);
  widen(a.inputs, "initial_state", "BHKV");
  expect_refused(k, a, {"blocks"}, "2^32 heads");
}

INSTANTIATE_TEST_SUITE_P(Registry, GpuValidation, ::testing::ValuesIn(kernel_dtypes()), kernel_dtype_name);
INSTANTIATE_TEST_SUITE_P(Registry, GpuValidationAnyHeadDim,
                         ::testing::ValuesIn(kernel_dtypes(false, [](const Kernel& k) { return k.limits.head_dims.empty(); })),
                         kernel_dtype_name);
INSTANTIATE_TEST_SUITE_P(Registry, GpuValidationSmallestK,
                         ::testing::ValuesIn(kernel_dtypes(false, [](const Kernel& k) { return k.limits.min_K > 1; })),
                         kernel_dtype_name);
INSTANTIATE_TEST_SUITE_P(Registry, GpuValidationGroupedValueHeads,
                         ::testing::ValuesIn(kernel_dtypes(true, takes_grouped_value_heads)), kernel_dtype_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuValidationAnyHeadDim);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuValidationSmallestK);

}  // namespace
