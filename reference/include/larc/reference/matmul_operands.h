// The arithmetic of the `io` precision grade (docs/gate.md "Precision grades"): a chunked form whose
// matrix products read operands rounded to an operand format F and accumulate in the scalar S, while
// elementwise work, exponentials, triangular solves and the carried state stay in S. With F = none
// the products are plain S products, so a chunked form written against MatmulOperands computes the
// same thing as before when nobody asks for rounding.
#pragma once

#include <stdexcept>
#include <string_view>

#include "larc/reference/low_precision.h"

namespace larc::ref {

// The format of a product's operands: none (S itself), bf16, fp16, or TF32 (fp32 inputs on TF32
// tensor cores), rounded to nearest, ties to even (low_precision.h), or truncated (tf32_truncated:
// the low 13 bits dropped, as when fp32 registers reach the tensor core unconverted). fp16 is the io
// grade's: half's precision without its overflow, since an operand past 65504 is a range failure that the
// judged output shows by itself (an overflowing kernel returns inf or NaN), not the precision the grade
// models; fp16_ieee keeps the overflow, as a kernel's IEEE half operands do.
enum class OperandFormat { none, bf16, fp16, fp16_ieee, tf32, tf32_truncated };

inline std::string_view operand_format_name(OperandFormat f) {
  switch (f) {
    case OperandFormat::none: return "none";
    case OperandFormat::bf16: return "bf16";
    case OperandFormat::fp16: return "fp16";
    case OperandFormat::fp16_ieee: return "fp16_ieee";
    case OperandFormat::tf32: return "tf32";
    case OperandFormat::tf32_truncated: return "tf32_truncated";
  }
  return "?";
}

template <class S>
class MatmulOperands {
 public:
  MatmulOperands() = default;
  explicit MatmulOperands(OperandFormat format) : format_(format) {}

  OperandFormat format() const { return format_; }
  bool rounds() const { return format_ != OperandFormat::none; }

  // m with every entry rounded to the operand format (m itself for none).
  Mat<S> operand(const Mat<S>& m) const {
    if (!rounds()) return m;
    return m.unaryExpr([this](const S& x) { return round_scalar(x); });
  }
  // A·B with both operands rounded to the format, accumulated in S.
  Mat<S> product(const Mat<S>& a, const Mat<S>& b) const {
    if (!rounds()) return a * b;
    return operand(a) * operand(b);
  }

 private:
  S round_scalar(const S& x) const {
    const double d = to_double(x);
    switch (format_) {
      case OperandFormat::none: return x;
      case OperandFormat::bf16: return from_double<S>(round_to(Dtype::bf16, d));
      case OperandFormat::fp16: return from_double<S>(round_to_fp16_without_overflow(d));
      case OperandFormat::fp16_ieee: return from_double<S>(round_to(Dtype::fp16, d));
      case OperandFormat::tf32: return from_double<S>(round_to_tf32(static_cast<float>(d)));
      case OperandFormat::tf32_truncated: return from_double<S>(truncate_to_tf32(static_cast<float>(d)));
    }
    throw std::invalid_argument("MatmulOperands: unknown operand format");
  }

  OperandFormat format_ = OperandFormat::none;
};

}  // namespace larc::ref
