// KLA-C1..C3 (SPEC §3) as exact identities. One write of the delta rule, computed by the reference's
// own delta_rule::State::step over rationals with the Kaczmarz step β = 1/‖k‖² (η = 1, ε = 0), is
// checked to be (C1) the orthogonal projection of the decayed state onto {S : S^T k = v}, (C2) the
// exact line-search step and (C3) a gradient step of size 1/‖k‖² on ℓ(S) = ½‖S^T k − v‖². Each
// function takes the write S_t to judge (kaczmarz_write(x) for the claim; tests pass wrong writes to
// show the checks can fail) and returns the largest exact residual: 0 means the identity holds.
#pragma once

#include <cstdint>

#include "larc/proofs_check/exact.h"

namespace larc::proofs {

// A random instance: previous state, decay α ∈ (0, 1] (1 when !with_decay), key k ≠ 0, value v.
struct KaczmarzInstance {
  Mat<rational> s_prev;
  rational alpha;
  Vec<rational> k, v;
};
KaczmarzInstance random_kaczmarz_instance(std::uint64_t seed, int dk, int dv, bool with_decay);

// The per-token loss ℓ(S) = ½‖S^T k − v‖² of KLA-C2/C3, in any scalar.
template <class S>
S per_token_loss(const Mat<S>& s, const Vec<S>& k, const Vec<S>& v) {
  return S(0.5) * S((s.transpose() * k - v).squaredNorm());
}

// ∇ℓ at s by central differences with step 1, exact for a quadratic ℓ (up to S's rounding).
template <class S, class Loss>
Mat<S> central_difference_gradient(const Mat<S>& s, Loss&& loss) {
  Mat<S> grad(s.rows(), s.cols());
  for (Eigen::Index i = 0; i < s.rows(); ++i)
    for (Eigen::Index j = 0; j < s.cols(); ++j) {
      Mat<S> plus = s, minus = s;
      plus(i, j) += S(1);
      minus(i, j) -= S(1);
      grad(i, j) = (loss(plus) - loss(minus)) / S(2);
    }
  return grad;
}

// S_t from delta_rule::State<rational>::step with β = kla_beta(k, η = 1, ε = 0).
Mat<rational> kaczmarz_write(const KaczmarzInstance& x);

// C1: S_t^T k − v = 0, and ⟨S_t − S̃, Δ⟩ = 0 for random Δ with Δ^T k = 0 (every feasible state is
// S_t + Δ, so ‖S_t + Δ − S̃‖² = ‖S_t − S̃‖² + ‖Δ‖²: S_t is the unique closest feasible state).
rational projection_residual(const KaczmarzInstance& x, const Mat<rational>& s_t, std::uint64_t seed);

// C2: the per-token loss along the update direction, L(β) = ½‖(S̃ + β k e^T)^T k − v‖², sampled at
// β = 0, 1, 2 and fitted exactly as a quadratic (checked at β = 3); its minimiser −b/2a must equal
// 1/‖k‖², and S_t must equal S̃ + (1/‖k‖²) k e^T. (With e = 0 every β minimises: only S_t = S̃ is checked.)
rational line_search_residual(const KaczmarzInstance& x, const Mat<rational>& s_t);

// C3: ∇ℓ(S̃) by exact central differences (exact for a quadratic), then S_t − (S̃ − ∇ℓ/‖k‖²).
rational gradient_step_residual(const KaczmarzInstance& x, const Mat<rational>& s_t);

}  // namespace larc::proofs
