// Tensors as a kernel sees them (DESIGN.md "Tolerance policy"): raw little-endian elements in their
// dtype (bf16, fp16, fp32, fp64), row-major, followed by a guard region of NaNs so that a kernel
// reading or writing past the end shows. Outputs start poisoned with a NaN of a fixed bit pattern
// (`poison`), so an element the kernel never wrote is told apart from a NaN it computed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "larc/reference/low_precision.h"
#include "larc/reference/tensor.h"

namespace larc::harness {

using larc::Dtype;
using larc::dtype_bytes;
using larc::dtype_name;

// A floating-point dtype by name: "bf16", "fp16", "fp32", "fp64", or "bfloat16", "float16", "float32",
// "float64"; throws std::invalid_argument naming the accepted names.
Dtype parse_dtype(const std::string& name);

class TypedTensor {
 public:
  static constexpr std::size_t kGuardElements = 64;

  TypedTensor() = default;
  // Every element set to the poison NaN. Every factory throws std::invalid_argument for an integer
  // dtype: a TypedTensor holds floating-point values.
  static TypedTensor poisoned(Dtype dtype, std::vector<std::int64_t> shape);
  // Each value rounded once to `dtype` (round to nearest, ties to even).
  static TypedTensor encode(Dtype dtype, const ref::Tensor<double>& values);
  // Raw little-endian elements (e.g. read from a file); throws std::invalid_argument on a size mismatch.
  static TypedTensor from_bytes(Dtype dtype, std::vector<std::int64_t> shape, const std::byte* bytes, std::size_t size);

  Dtype dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::size_t size() const { return count_; }
  std::size_t size_bytes() const { return count_ * dtype_bytes(dtype_); }

  // Raw elements; the guard region follows the last one.
  std::byte* data() { return bytes_.data(); }
  const std::byte* data() const { return bytes_.data(); }
  // Typed access for the dtypes with a C++ type; throws std::invalid_argument on a dtype mismatch.
  float* f32();
  const float* f32() const;
  double* f64();
  const double* f64() const;
  std::uint16_t* bits16();  // bf16 or fp16 as their bit patterns
  const std::uint16_t* bits16() const;

  double get(std::size_t i) const;          // element i widened to double (exact)
  void set(std::size_t i, double value);   // rounds value to the dtype
  bool is_poison(std::size_t i) const;     // still the poison bit pattern: never written
  bool guard_intact() const;               // the guard region still holds the poison pattern
  ref::Tensor<double> decode() const;

 private:
  Dtype dtype_ = Dtype::fp32;
  std::vector<std::int64_t> shape_;
  std::size_t count_ = 0;
  std::vector<std::byte> bytes_;  // count_ elements + kGuardElements guard elements
  // Room for the elements of `shape` (not yet written) and the poisoned guard region after them.
  static TypedTensor guarded(Dtype dtype, std::vector<std::int64_t> shape);
  void require(bool dtype_matches, const char* accessor) const;
};

// Named tensors of a call: inputs ("q", "k", "v", "g", "beta", ...) or outputs ("o", "final_state").
using TensorMap = std::map<std::string, TypedTensor>;
// The same in float64 values (inputs already rounded to their dtype, oracle outputs, ...).
using ValueMap = std::map<std::string, ref::Tensor<double>>;

ValueMap decode_all(const TensorMap& tensors);

}  // namespace larc::harness
