// The VLA paper's memory-level experiments (SPEC §1, claims VLA-C3, C7, C8), shared by the claims
// (claims_vla_memory.cpp) and the accuracy report's figures (`larc report`): VLA beside its baselines
// LA (linear_attention.h), DeltaNet, GDN, KLA (delta_rule.h) and softmax attention, each memory
// written token by token in double on declared inputs. The paper measured inside trained models;
// these runs measure the memories themselves.
//
// Declared inputs (every mechanism sees the same keys and values; its gates come from a separate stream):
// keys, queries, values N(0, 1) entries clipped to [−4, 4] (bounded inputs), d_k = d_v = d_h = 32.
//   LA       φ = ELU+1, ratio read (ε = 1e-6)
//   DeltaNet keys L2-normalised, β_t = σ(x_t), x_t ~ N(0, 1); read with the normalised query
//   GDN      as DeltaNet, α_t = σ(y_t), y_t ~ N(3, 1) (mean α ≈ 0.93)
//   KLA      raw keys, β_t = η_t/(‖k_t‖² + 1e-6), η_t = σ(x_t), α_t as GDN; read with the normalised query
//   VLA      λ0 = 1, the authors' u_t = norm(W_u k_t)/√d (W_u ~ N(0, 1/d)), φ = ELU+1, ratio read, nudge off
//   softmax  o = Σ_j softmax(q·k_j/√d) v_j over every token written
//   VLA(φ = identity)  VLA as above with the identity feature map (k̂ = k/‖k‖, like DeltaNet's keys); recall only
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace larc::props::vla_memory {

inline constexpr int kDim = 32;
enum Mech { kLA, kDeltaNet, kGDN, kKLA, kVLA, kSoftmax, kVLAIdentity, kMechs };
inline constexpr std::array<const char*, kMechs> kNames = {"LA", "DeltaNet", "GDN", "KLA", "VLA", "softmax",
                                                          "VLA(φ = identity)"};

// ‖S_t‖_F after every token t = 1..T (element t − 1) of one trial of the state-norm experiment: keys
// and values as declared, values of mean `value_mean`. The trial's inputs depend on (seed, trial)
// only, so every mechanism sees the same ones. Softmax keeps no state (throws std::invalid_argument).
std::vector<double> state_norms(Mech m, std::uint64_t seed, int trial, double value_mean, int T);

// The recall experiment: n key/value pairs written at evenly spread positions of a sequence of T
// tokens (random fillers elsewhere), then read with every pair's key; a hit when the output is
// nearest in cosine to the pair's own value among the n pair values. Returns the hits.
int recalled(Mech m, std::uint64_t trial_seed, int n, int T);
// The seed of a recall trial.
inline std::uint64_t recall_trial_seed(std::uint64_t seed, int trial) { return seed * 7919 + static_cast<std::uint64_t>(trial); }
// The two recall sweeps: n pairs and no fillers (T = n) for n in kPairs; 8 pairs in T tokens for T in kLengths.
inline constexpr std::array<int, 6> kPairs = {8, 16, 24, 32, 48, 64};
inline constexpr std::array<int, 7> kLengths = {8, 16, 32, 64, 128, 256, 512};
inline constexpr int kPairsAmongFillers = 8;
inline int recalled_without_fillers(Mech m, std::uint64_t seed, int trial, int n) {
  return recalled(m, recall_trial_seed(seed, trial), n, n);
}
inline int recalled_among_fillers(Mech m, std::uint64_t seed, int trial, int T) {
  return recalled(m, recall_trial_seed(seed, trial) + 1, kPairsAmongFillers, T);
}

}  // namespace larc::props::vla_memory
