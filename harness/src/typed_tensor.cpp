#include "larc/harness/typed_tensor.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "cores.h"
#include "larc/fixtures/float_bits.h"

namespace larc::harness {

namespace {
// NaNs with a payload no arithmetic produces (signalling, mantissa 0x3A...): "never written".
constexpr std::uint16_t kPoisonBf16 = 0x7FBA;
constexpr std::uint16_t kPoisonFp16 = 0x7DBA;
constexpr std::uint32_t kPoisonF32 = 0x7FBADBADu;
constexpr std::uint64_t kPoisonF64 = 0x7FF7BADBADBADBADull;
// Elements an encoding, decoding or poisoning pass hands to one core at a time (cores.h parallel_runs: a tensor of
// one run stays on the calling thread).
constexpr std::size_t kElementsPerRun = std::size_t{1} << 20;

void write_poison(Dtype d, std::byte* p) {
  switch (d) {
    case Dtype::bf16: std::memcpy(p, &kPoisonBf16, 2); break;
    case Dtype::fp16: std::memcpy(p, &kPoisonFp16, 2); break;
    case Dtype::fp32: std::memcpy(p, &kPoisonF32, 4); break;
    case Dtype::fp64: std::memcpy(p, &kPoisonF64, 8); break;
    default: break;  // refused by poisoned()
  }
}

bool holds_poison(Dtype d, const std::byte* p) {
  switch (d) {
    case Dtype::bf16: return std::memcmp(p, &kPoisonBf16, 2) == 0;
    case Dtype::fp16: return std::memcmp(p, &kPoisonFp16, 2) == 0;
    case Dtype::fp32: return std::memcmp(p, &kPoisonF32, 4) == 0;
    case Dtype::fp64: return std::memcmp(p, &kPoisonF64, 8) == 0;
    default: break;  // refused by poisoned()
  }
  return false;
}
}  // namespace

Dtype parse_dtype(const std::string& name) {
  if (name == "bf16" || name == "bfloat16") return Dtype::bf16;
  if (name == "fp16" || name == "float16" || name == "f16") return Dtype::fp16;
  if (name == "fp32" || name == "float32" || name == "f32") return Dtype::fp32;
  if (name == "fp64" || name == "float64" || name == "f64") return Dtype::fp64;
  throw std::invalid_argument("dtype: expected one of bf16, fp16, fp32, fp64, got '" + name + "'");
}

TypedTensor TypedTensor::guarded(Dtype dtype, std::vector<std::int64_t> shape) {
  if (!is_floating(dtype))
    throw std::invalid_argument("TypedTensor: dtype " + std::string(dtype_name(dtype)) +
                                " is not a floating-point dtype (bf16, fp16, fp32 or fp64)");
  TypedTensor t;
  t.dtype_ = dtype;
  t.count_ = ref::Tensor<double>::count(shape);
  t.shape_ = std::move(shape);
  const std::size_t w = dtype_bytes(dtype);
  t.bytes_.resize((t.count_ + kGuardElements) * w);
  for (std::size_t i = t.count_; i < t.count_ + kGuardElements; ++i) write_poison(dtype, t.bytes_.data() + i * w);
  return t;
}

TypedTensor TypedTensor::poisoned(Dtype dtype, std::vector<std::int64_t> shape) {
  TypedTensor t = guarded(dtype, std::move(shape));
  const std::size_t w = dtype_bytes(dtype);
  detail::parallel_runs(t.count_, kElementsPerRun, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) write_poison(dtype, t.bytes_.data() + i * w);
  });
  return t;
}

TypedTensor TypedTensor::encode(Dtype dtype, const ref::Tensor<double>& values) {
  if (values.data.size() != ref::Tensor<double>::count(values.shape))
    throw std::invalid_argument("TypedTensor::encode: data size does not match shape " + ref::shape_string(values.shape));
  TypedTensor t = guarded(dtype, values.shape);  // every element is written below
  detail::parallel_runs(t.count_, kElementsPerRun, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) t.set(i, values.data[i]);
  });
  return t;
}

TypedTensor TypedTensor::from_bytes(Dtype dtype, std::vector<std::int64_t> shape, const std::byte* bytes, std::size_t size) {
  TypedTensor t = guarded(dtype, std::move(shape));  // every element is copied below
  if (size != t.size_bytes())
    throw std::invalid_argument("TypedTensor::from_bytes: " + std::to_string(size) + " bytes for " +
                                std::to_string(t.count_) + " elements of " + std::string(dtype_name(dtype)));
  std::memcpy(t.bytes_.data(), bytes, size);
  return t;
}

void TypedTensor::require(bool dtype_matches, const char* accessor) const {
  if (!dtype_matches)
    throw std::invalid_argument(std::string("TypedTensor::") + accessor + ": tensor holds " +
                                std::string(dtype_name(dtype_)));
}

float* TypedTensor::f32() { require(dtype_ == Dtype::fp32, "f32"); return reinterpret_cast<float*>(bytes_.data()); }
const float* TypedTensor::f32() const { require(dtype_ == Dtype::fp32, "f32"); return reinterpret_cast<const float*>(bytes_.data()); }
double* TypedTensor::f64() { require(dtype_ == Dtype::fp64, "f64"); return reinterpret_cast<double*>(bytes_.data()); }
const double* TypedTensor::f64() const { require(dtype_ == Dtype::fp64, "f64"); return reinterpret_cast<const double*>(bytes_.data()); }
std::uint16_t* TypedTensor::bits16() { require(dtype_bytes(dtype_) == 2, "bits16"); return reinterpret_cast<std::uint16_t*>(bytes_.data()); }
const std::uint16_t* TypedTensor::bits16() const {
  require(dtype_bytes(dtype_) == 2, "bits16");
  return reinterpret_cast<const std::uint16_t*>(bytes_.data());
}

double TypedTensor::get(std::size_t i) const {
  const std::byte* p = bytes_.data() + i * dtype_bytes(dtype_);
  switch (dtype_) {
    case Dtype::bf16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      const std::uint32_t w = std::uint32_t{h} << 16;
      float f;
      std::memcpy(&f, &w, 4);
      return f;
    }
    case Dtype::fp16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return fixtures::decode_float_bits(h, fixtures::kHalf);
    }
    case Dtype::fp32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case Dtype::fp64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    default: break;  // refused by poisoned()
  }
  return std::nan("");
}

void TypedTensor::set(std::size_t i, double value) {
  std::byte* p = bytes_.data() + i * dtype_bytes(dtype_);
  const double r = ref::round_to(dtype_, value);  // exact in the dtype from here on
  switch (dtype_) {
    case Dtype::bf16: {
      const float f = static_cast<float>(r);
      std::uint32_t w;
      std::memcpy(&w, &f, 4);
      std::uint16_t h = static_cast<std::uint16_t>(w >> 16);
      if (std::isnan(r)) h = 0x7FC0;  // a quiet NaN, never the poison pattern
      std::memcpy(p, &h, 2);
      break;
    }
    case Dtype::fp16: {
      // r is an fp16 value (round_to above), so the exact encoding exists.
      const std::uint16_t h = static_cast<std::uint16_t>(*fixtures::encode_float_bits_exact(r, fixtures::kHalf));
      std::memcpy(p, &h, 2);
      break;
    }
    case Dtype::fp32: {
      const float f = static_cast<float>(r);
      std::memcpy(p, &f, 4);
      break;
    }
    case Dtype::fp64: std::memcpy(p, &r, 8); break;
    default: break;  // refused by poisoned()
  }
}

bool TypedTensor::is_poison(std::size_t i) const { return holds_poison(dtype_, bytes_.data() + i * dtype_bytes(dtype_)); }

bool TypedTensor::guard_intact() const {
  for (std::size_t i = count_; i < count_ + kGuardElements; ++i)
    if (!is_poison(i)) return false;
  return true;
}

ref::Tensor<double> TypedTensor::decode() const {
  ref::Tensor<double> t(shape_);
  detail::parallel_runs(count_, kElementsPerRun, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) t.data[i] = get(i);
  });
  return t;
}

ValueMap decode_all(const TensorMap& tensors) {
  ValueMap out;
  for (const auto& [name, t] : tensors) out.emplace(name, t.decode());
  return out;
}

}  // namespace larc::harness
