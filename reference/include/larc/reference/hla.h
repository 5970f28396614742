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

// The initial summaries of every (sequence, head) of a batched call, w = V, or V + 1 normalised (the
// normaliser as the last column, hla_common.h): second order sk [B,H,K,K], c and g [B,H,K,w]; AHLA p and
// e [B,H,K,w].
template <class S>
struct BatchedSecondOrderMemory {
  Tensor<S> sk, c, g;
};
template <class S>
struct BatchedAhlaMemory {
  Tensor<S> p, e;
};

// Second-order masked HLA and AHLA as families (family.h) for the batched driver and the harness; each
// names its batched initial summaries (Memory), checks their shapes (check_memory) and seeds a head's
// problem with them (set_initial). Both share one problem, one result and the same forms.
struct FamilyBase {
  static constexpr std::array forms{Form::serial, Form::materialized, Form::chunked};
  template <class S>
  using Problem = hla::Problem<S>;
  template <class S>
  using Result = hla::Result<S>;
};

struct SecondOrderFamily : FamilyBase {
  static constexpr std::string_view name = "hla second order";
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return hla::run(p, form, chunk, ops);
  }
  template <class S>
  using Memory = BatchedSecondOrderMemory<S>;
  template <class S>
  static void check_memory(const Memory<S>& m, std::int64_t B, std::int64_t H, std::int64_t K, std::int64_t w) {
    require_shape(m.sk, "initial sk (S^K_0)", {B, H, K, K});
    require_shape(m.c, "initial c ([C_0 | m_0])", {B, H, K, w});
    require_shape(m.g, "initial g ([G_0 | h_0])", {B, H, K, w});
  }
  template <class S>
  static void set_initial(Problem<S>& p, const Memory<S>& m, std::int64_t b, std::int64_t h) {
    p.second_order_initial = SecondOrderMemory<S>{head_state(m.sk, b, h), head_state(m.c, b, h), head_state(m.g, b, h)};
  }
};
static_assert(MechanismFamily<SecondOrderFamily>);

struct AhlaFamily : FamilyBase {
  static constexpr std::string_view name = "ahla";
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return run_ahla(p, form, chunk, ops);
  }
  template <class S>
  using Memory = BatchedAhlaMemory<S>;
  template <class S>
  static void check_memory(const Memory<S>& m, std::int64_t B, std::int64_t H, std::int64_t K, std::int64_t w) {
    require_shape(m.p, "initial p ([P_0 | m^K_0])", {B, H, K, w});
    require_shape(m.e, "initial e ([E_0 | n_0])", {B, H, K, w});
  }
  template <class S>
  static void set_initial(Problem<S>& p, const Memory<S>& m, std::int64_t b, std::int64_t h) {
    p.ahla_initial = AhlaMemory<S>{head_state(m.p, b, h), head_state(m.e, b, h)};
  }
};
static_assert(MechanismFamily<AhlaFamily>);

// q, k [B, T, H, d], v [B, T, H, d_v] row-major (FLA's layout); returns o [B, T, H, d_v] of family F
// (SecondOrderFamily or AhlaFamily). Options: normalized / eps / gamma as in Problem (no read scale:
// SPEC §5 has none; scale q first). `operands` rounds the chunked form's product operands (the io
// grade's baseline, see second_chunked and ahla_chunked). `initial`: the summaries every head starts
// from (F::Memory; absent: empty).
template <MechanismFamily F = SecondOrderFamily, class S>
Tensor<S> hla_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Options<S>& opt = {},
                      Form form = Form::serial, Eigen::Index chunk = 64, OperandFormat operands = OperandFormat::none,
                      const std::optional<typename F::template Memory<S>>& initial = std::nullopt) {
  const auto [B, T, H, K, V] = batched_dims<S>(q, k, v, nullptr);
  if (!(opt.gamma > S(0) && opt.gamma <= S(1))) throw std::invalid_argument("gamma: expected a decay in (0, 1]");
  if (!(opt.eps >= S(0))) throw std::invalid_argument("eps: expected eps >= 0");
  if (form == Form::chunked && chunk < 1) throw std::invalid_argument("chunk: expected a chunk size >= 1");
  if (initial) F::check_memory(*initial, B, H, K, value_width(opt, V));
  Tensor<S> o(std::vector<std::int64_t>{B, T, H, V});
  run_each_head<F, S>(
      B, H, form, chunk, operands,
      [&](std::int64_t b, std::int64_t h) {
        Problem<S> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), opt};
        if (initial) F::set_initial(p, *initial, b, h);
        return p;
      },
      [&](std::int64_t b, std::int64_t h, const Result<S>& r) { set_head_rows(o, b, h, r.o); });
  return o;
}

}  // namespace larc::ref::hla
