// Shared pieces of the GPU kernel tests: every registered kernel with its harness subject and
// mechanism, the registry's (kernel, dtype) pairs the tests are parameterised over, seeded inputs for a shape, and slicing/tiling of typed tensors along a named dimension
// (the mechanism's dimension letters say which axis is B, T or H).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "larc/gpu/api.h"
#include "larc/harness/runner.h"
#include "larc/harness/subject.h"

namespace larc::gpu_test {

using harness::Dtype;
using harness::Shape;
using harness::TensorMap;
using harness::TypedTensor;

struct GpuSubject {
  const gpu::Kernel* kernel;
  const harness::Subject* subject;
  const harness::Mechanism* mechanism;
};

// The registered kernels the harness made subjects of (all of them on a machine with a device).
inline std::vector<GpuSubject> gpu_subjects() {
  std::vector<GpuSubject> out;
  for (const gpu::Kernel& k : gpu::kernels())
    for (const harness::Subject& s : harness::subjects())
      if (s.name == k.name && s.mechanism == k.mechanism) out.push_back({&k, &s, &harness::find_mechanism(k.mechanism)});
  return out;
}

// k's subject, or nullopt where the harness made none of it (no device, or a mechanism it lacks).
inline std::optional<GpuSubject> gpu_subject(const gpu::Kernel& k) {
  for (const GpuSubject& g : gpu_subjects())
    if (g.kernel == &k) return g;
  return std::nullopt;
}

// One kernel of the registry in one dtype it takes: the parameter of the value-parameterised GPU tests,
// which gtest_discover_tests makes one CTest entry each. The registry needs no device, so the entries
// exist (and skip themselves) on a machine without one.
struct KernelDtype {
  const gpu::Kernel* kernel;
  gpu::Dtype dtype;
};

inline void PrintTo(const KernelDtype& p, std::ostream* os) {
  *os << p.kernel->name << " (" << p.kernel->mechanism << ") " << gpu::dtype_name(p.dtype);
}

inline Dtype harness_dtype(gpu::Dtype d) {
  return d == gpu::Dtype::bf16 ? Dtype::bf16 : d == gpu::Dtype::fp16 ? Dtype::fp16 : Dtype::fp32;
}

// Every (kernel, dtype) pair of the registry whose kernel `keep` accepts; with first_dtype_only, each
// kernel in its first dtype only (the properties that compare a kernel with itself bit for bit).
inline std::vector<KernelDtype> kernel_dtypes(bool first_dtype_only = false,
                                              const std::function<bool(const gpu::Kernel&)>& keep = {}) {
  std::vector<KernelDtype> out;
  for (const gpu::Kernel& k : gpu::kernels()) {
    if (keep && !keep(k)) continue;
    for (gpu::Dtype d : k.dtypes) {
      if (d != gpu::Dtype::bf16 && d != gpu::Dtype::fp16 && d != gpu::Dtype::fp32) continue;
      out.push_back({&k, d});
      if (first_dtype_only) break;
    }
  }
  return out;
}

// The CTest-visible name of a pair: the kernel's name with '_' for every other character, then the
// dtype (gdn-chunked in bf16: gdn_chunked_bf16); the mechanism is added where two kernels share a name.
inline std::string kernel_dtype_name(const ::testing::TestParamInfo<KernelDtype>& info) {
  const gpu::Kernel& k = *info.param.kernel;
  std::string name = k.name;
  int same_name = 0;
  for (const gpu::Kernel& other : gpu::kernels()) same_name += other.name == k.name;
  if (same_name > 1) (name += '_') += k.mechanism;
  (name += '_') += gpu::dtype_name(info.param.dtype);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

// A shape the kernel takes: K = V = d unless the kernel lists its head dims or d is below its smallest K.
inline Shape shape_for(const gpu::Kernel& k, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t d) {
  if (!k.limits.head_dims.empty()) d = k.limits.head_dims.front();
  d = std::max(d, k.limits.min_K);
  if (k.limits.max_K > 0) d = std::min(d, k.limits.max_K);
  return {B, T, H, d, d};
}

inline Dtype first_dtype(const harness::Subject& s) { return s.dtypes.front(); }

inline TensorMap inputs_for(const harness::Mechanism& m, const Shape& s, Dtype dtype, std::uint64_t seed) {
  TensorMap out;
  for (auto& [name, values] : m.generate(s, seed, m.resolve_knobs({}))) {
    bool fp32 = false;  // states, their cotangents and the scale stay float32 whatever the case's dtype
    for (const auto& spec : m.inputs) fp32 = fp32 || (spec.name == name && spec.always_fp32);
    out[name] = TypedTensor::encode(fp32 ? Dtype::fp32 : dtype, values);
  }
  return out;
}

inline TensorMap run(const GpuSubject& g, const Shape& s, Dtype dtype, const TensorMap& inputs) {
  TensorMap out = harness::poisoned_outputs(*g.mechanism, s, dtype);
  g.subject->launch(inputs, out);
  return out;
}

// The axis of `letter` in a tensor's dims, -1 when it has none.
inline int axis_of(const std::string& dims, char letter) {
  const auto p = dims.find(letter);
  return p == std::string::npos ? -1 : static_cast<int>(p);
}

// The head axis of a tensor's dims: H, or W (value heads, = H in these tests), -1 when it has none.
inline int head_axis(const std::string& dims) {
  const auto p = dims.find_first_of("HW");
  return p == std::string::npos ? -1 : static_cast<int>(p);
}

// Elements [begin, end) of `axis`.
inline TypedTensor slice(const TypedTensor& t, int axis, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> shape = t.shape();
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (std::size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const std::size_t es = harness::dtype_bytes(t.dtype()), n = shape[axis];
  shape[axis] = end - begin;
  TypedTensor out = TypedTensor::poisoned(t.dtype(), shape);
  for (std::int64_t o = 0; o < outer; ++o)
    std::memcpy(out.data() + o * (end - begin) * inner * es, t.data() + (o * n + begin) * inner * es,
                (end - begin) * inner * es);
  return out;
}

// `times` copies of every slice along `axis` (a tensor of extent 1 there becomes extent `times`).
inline TypedTensor tile(const TypedTensor& t, int axis, std::int64_t times) {
  std::vector<std::int64_t> shape = t.shape();
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (std::size_t i = axis; i < shape.size(); ++i) inner *= shape[i];
  const std::size_t es = harness::dtype_bytes(t.dtype());
  shape[axis] *= times;
  TypedTensor out = TypedTensor::poisoned(t.dtype(), shape);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t r = 0; r < times; ++r)
      std::memcpy(out.data() + (o * times + r) * inner * es, t.data() + o * inner * es, inner * es);
  return out;
}

inline bool bitwise_equal(const TypedTensor& a, const TypedTensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// The first element index where a and b differ, with both values, for failure messages.
inline std::string first_difference(const TypedTensor& a, const TypedTensor& b) {
  if (a.shape() != b.shape()) return "shapes differ";
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(a.data() + i * harness::dtype_bytes(a.dtype()), b.data() + i * harness::dtype_bytes(b.dtype()),
                    harness::dtype_bytes(a.dtype())) != 0)
      return "element " + std::to_string(i) + ": " + std::to_string(a.get(i)) + " vs " + std::to_string(b.get(i));
  return "equal";
}

#define LARC_SKIP_WITHOUT_DEVICE()                                                              \
  do {                                                                                          \
    if (const auto info = larc::gpu::query_devices(); !info.present)                           \
      GTEST_SKIP() << "no CUDA device: " << info.error;                                         \
  } while (0)

}  // namespace larc::gpu_test
