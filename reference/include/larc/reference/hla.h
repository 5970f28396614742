// The HLA family (SPEC §5): second order (hla_second.h), AHLA (hla_ahla.h), third order
// (hla_third.h), and the batched wrapper for second-order masked HLA and AHLA in FLA's tensor layout.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>

#include "larc/reference/hla_ahla.h"
#include "larc/reference/hla_second.h"
#include "larc/reference/hla_third.h"
#include "larc/reference/family.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/tensor.h"

namespace larc::ref::hla {

// Second-order masked HLA (the derived decay, which is the printed one at γ = 1) in the given form:
// serial/streamed = State::step over the sequence, materialized = ((A_γ Aᵀ) ⊙ Γ) V, chunked = the
// derived chunk form (any C ≥ 1); chunk and ops are used by Form::chunked only.
template <class S>
Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  switch (form) {
    case Form::serial:
    case Form::streamed: return second_serial(p, SecondOrder::masked);
    case Form::materialized: return second_materialized(p, SecondOrder::masked);
    case Form::chunked: return second_chunked(p, chunk, ops);
  }
  throw std::invalid_argument("hla::run: unknown form");
}

// AHLA (SPEC §5, HLA-C6) in the given form: serial/streamed = State::step, materialized = ((A A) ⊙ L) V,
// chunked = its chunk form; chunk and ops are used by Form::chunked only.
template <class S>
Result<S> run_ahla(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  switch (form) {
    case Form::serial:
    case Form::streamed: return ahla_serial(p);
    case Form::materialized: return ahla_materialized(p);
    case Form::chunked: return ahla_chunked(p, chunk, ops);
  }
  throw std::invalid_argument("hla::run_ahla: unknown form");
}

// Second-order masked HLA and AHLA as families (family.h) for the batched driver and the harness.
struct SecondOrderFamily {
  static constexpr std::string_view name = "hla second order";
  static constexpr std::array forms{Form::serial, Form::materialized, Form::chunked};
  template <class S>
  using Problem = hla::Problem<S>;
  template <class S>
  using Result = hla::Result<S>;
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return hla::run(p, form, chunk, ops);
  }
};
static_assert(MechanismFamily<SecondOrderFamily>);

struct AhlaFamily {
  static constexpr std::string_view name = "ahla";
  static constexpr std::array forms{Form::serial, Form::materialized, Form::chunked};
  template <class S>
  using Problem = hla::Problem<S>;
  template <class S>
  using Result = hla::Result<S>;
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return run_ahla(p, form, chunk, ops);
  }
};
static_assert(MechanismFamily<AhlaFamily>);

// q, k [B, T, H, d], v [B, T, H, d_v] row-major (FLA's layout); returns o [B, T, H, d_v] of family F
// (SecondOrderFamily or AhlaFamily). Options: normalized / eps / gamma as in Problem (no read scale:
// SPEC §5 has none; scale q first). `operands` rounds the chunked form's product operands (the io
// grade's baseline, see second_chunked and ahla_chunked).
template <MechanismFamily F = SecondOrderFamily, class S>
Tensor<S> hla_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Options<S>& opt = {},
                      Form form = Form::serial, Eigen::Index chunk = 64, OperandFormat operands = OperandFormat::none) {
  const auto [B, T, H, K, V] = batched_dims<S>(q, k, v, nullptr);
  if (!(opt.gamma > S(0) && opt.gamma <= S(1))) throw std::invalid_argument("gamma: expected a decay in (0, 1]");
  if (!(opt.eps >= S(0))) throw std::invalid_argument("eps: expected eps >= 0");
  if (form == Form::chunked && chunk < 1) throw std::invalid_argument("chunk: expected a chunk size >= 1");
  Tensor<S> o(std::vector<std::int64_t>{B, T, H, V});
  run_each_head<F, S>(
      B, H, form, chunk, operands,
      [&](std::int64_t b, std::int64_t h) { return Problem<S>{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), opt}; },
      [&](std::int64_t b, std::int64_t h, const Result<S>& r) { set_head_rows(o, b, h, r.o); });
  return o;
}

}  // namespace larc::ref::hla
