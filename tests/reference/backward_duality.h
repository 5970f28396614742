// What the *_backward_* tests of every family share (docs/gradients.md, "How the adjoint is checked"):
// which cotangents a run seeds, and the two sides of the dot-product (duality) test
//
//     ⟨cotangents, J·δ⟩ = ⟨Jᵀ·cotangents, δ⟩,
//
// each accumulated as a Pairing.
#pragma once

#include <string>

namespace larc::testing::backward_checks {

// Which cotangents are nonzero: the outputs', the final state's (and, for linear attention, the final
// normaliser's), or both.
enum class Seeds { d_o, d_final_state, both };

inline std::string seeds_name(Seeds w) {
  switch (w) {
    case Seeds::d_o: return "do";
    case Seeds::d_final_state: return "dht";
    case Seeds::both: return "do+dht";
  }
  return "?";
}

inline constexpr Seeds kAllSeeds[] = {Seeds::d_o, Seeds::d_final_state, Seeds::both};

// One side of the duality: its value and Σ|terms|, the magnitude a rounded residual is judged against.
template <class S>
struct Pairing {
  S value = S(0);
  S magnitude = S(0);
  template <class A, class B>
  void add(const A& a, const B& b) {
    if (a.size() == 0 || b.size() == 0) return;
    value += S(a.cwiseProduct(b).sum());
    magnitude += S(a.cwiseProduct(b).cwiseAbs().sum());
  }
};

}  // namespace larc::testing::backward_checks
