// Log-linear attention (SPEC §4): a Fenwick hierarchy of states, one per level, each read with its own
// weight λ_t^{(ℓ)}. Two variants share every form:
//
//   Mamba-2 (scalar decay): transition M_r = a_r, write k_s v_s^T;
//   GDN: transition M_r = a_r (I − β_r k_r k_r^T), write β_s k_s v_s^T.
//
//   o_t = scale Σ_{s≤t} λ_t^{(ℓ(t,s))} q_t^T [Π_{r=s+1..t} M_r] w_s k_s v_s^T      (w = 1 or β)
//
// Tokens are 0-indexed; ℓ is fenwick::level. Decays are carried as a = e^{g} (no exp in the forms),
// so exact rational runs are possible; λ is a T×L matrix (row t, column ℓ) with L ≥ level_count(T).
//
// Continuing a sequence (docs/gradients.md, "Continuing a sequence"): a problem may start after t0
// earlier tokens. Its Start holds t0 and the states of the buckets those tokens form at query t0
// (fenwick::carried_levels(t0): level ℓ for each set bit ℓ − 1 of t0; the bucket holds the tokens
// [t0_ℓ − 2^{ℓ−1}, t0_ℓ), t0_ℓ = t0 with its low ℓ − 1 bits cleared), each
//
//   Z^{(ℓ)} = Σ_{s in bucket ℓ} [Π_{r=s+1..t0−1} M_r] w_s k_s v_s^T              (transitions up to t0 − 1)
//
// Row t of the problem is then token t0 + t: every level is that of the absolute positions, λ keeps the
// problem's own rows (L ≥ level_count(t0 + T)), and
//
//   o_t = scale Σ_{s≤t} λ_t^{(ℓ(t0+t, t0+s))} q_t^T [Π_{r=s+1..t} M_r] w_s k_s v_s^T
//       + scale Σ_{ℓ carried} λ_t^{(ℓ(t0+t, t0_ℓ − 1))} q_t^T [Π_{r=0..t} M_r] Z^{(ℓ)}.
//
// A bucket of t0 stays together at every later query (one level for all its tokens), so running
// [0, t0 + T) whole equals running [0, t0) and continuing [t0, t0 + T) from continuation_start of the first
// part, in every form.
//
// Verbs: materialized (O = (H ⊙ A) V, A_ts = q_t^T Π M w_s k_s: QK^T ⊙ decay products for Mamba-2, the
// ordered products of delta_rule::materialized for GDN), serial (State::step over the sequence: the
// per-level states with the cascade), chunked (any power-of-two chunk C, any T: intra-chunk levels on
// the diagonal blocks, inter-chunk states on a Fenwick stack of chunks read at chunk level + log2 C),
// State::step (decoding; its live memory is measured). GDN reuses delta_rule.h for its transitions.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "larc/reference/delta_rule.h"
#include "larc/reference/fenwick.h"
#include "larc/reference/family.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/tensor.h"
#include "larc/reference/types.h"

namespace larc::ref::log_linear {

enum class Variant { mamba2, gdn };

inline const char* variant_name(Variant v) { return v == Variant::mamba2 ? "mamba2" : "gdn"; }

// Where a problem continues a sequence: `offset` = t0 earlier tokens, and `level_states` one d_k×d_v state
// Z^{(ℓ)} per level of fenwick::carried_levels(t0), in that (increasing) order. t0 = 0 has none.
template <class S>
struct Start {
  std::uint64_t offset = 0;
  std::vector<Mat<S>> level_states;
};

template <class S>
struct Problem {
  Variant variant = Variant::mamba2;
  Mat<S> q, k, v;  // T×d_k, T×d_k, T×d_v
  Vec<S> alpha;    // T decays a_t = e^{g_t} ∈ [0, 1]
  Vec<S> beta;     // T steps β_t (GDN only; ignored for Mamba-2)
  Mat<S> lambda;   // T×L level scales, λ(t, ℓ) = λ_t^{(ℓ)}, L ≥ level_count(T)
  S scale = S(1);  // read scale; FLA's chunk_log_linear_attn applies none (1)
  std::optional<Start<S>> start;  // none: the sequence starts at token 0

  Eigen::Index T() const { return q.rows(); }
  // t0, the absolute position of row 0.
  std::uint64_t offset() const { return start ? start->offset : 0; }
  Eigen::Index dk() const { return q.cols(); }
  Eigen::Index dv() const { return v.cols(); }
};

// Throws std::invalid_argument naming the field whose shape disagrees.
template <class S>
void validate(const Problem<S>& p) {
  const auto T = p.T();
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("log_linear: " + what);
  };
  need(p.dk() >= 1, "q must have d_k >= 1 columns");
  need(p.k.rows() == T && p.k.cols() == p.dk(), "k must be T×d_k like q");
  need(p.v.rows() == T && p.dv() >= 1, "v must be T×d_v with T rows like q and d_v >= 1");
  need(p.alpha.size() == T, "alpha must have T entries");
  if (p.variant == Variant::gdn) need(p.beta.size() == T, "beta must have T entries (GDN variant)");
  need(p.lambda.rows() == T, "lambda must have T rows (one per query token)");
  const std::uint64_t t0 = p.offset();
  if (p.start) {
    need(t0 < fenwick::kPositionLimit - static_cast<std::uint64_t>(T), "start.offset + T must be < 2^62");
    const std::vector<int> levels = fenwick::carried_levels(t0);
    need(p.start->level_states.size() == levels.size(),
         "start.level_states must hold one state per bucket of t0 = " + std::to_string(t0) + " (popcount(t0) = " +
             std::to_string(levels.size()) + "), got " + std::to_string(p.start->level_states.size()));
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const Mat<S>& z = p.start->level_states[i];
      need(z.rows() == p.dk() && z.cols() == p.dv(), "start.level_states[" + std::to_string(i) + "] (level " +
                                                         std::to_string(levels[i]) + ") must be d_k×d_v");
    }
  }
  if (T > 0) {
    const int L = fenwick::level_count(t0 + static_cast<std::uint64_t>(T));
    const std::string count = p.start ? "level_count(t0 + T) = ceil(log2(t0 + T)) + 1 = " + std::to_string(L) +
                                            " columns (t0 = " + std::to_string(t0) + ")"
                                      : "level_count(T) = ceil(log2 T) + 1 = " + std::to_string(L) + " columns";
    need(p.lambda.cols() >= L, "lambda must have at least " + count + ", got " + std::to_string(p.lambda.cols()));
  }
}

namespace detail {

// D(t, s) = Π_{r=s+1..t} a_r for s ≤ t, 0 above the diagonal: built as products, never as ratios, so
// a = 0 and rationals stay exact.
template <class S>
Mat<S> decay_products(const Vec<S>& a) {
  const Eigen::Index n = a.size();
  Mat<S> d = Mat<S>::Zero(n, n);
  for (Eigen::Index t = 0; t < n; ++t) {
    d(t, t) = S(1);
    for (Eigen::Index s = t - 1; s >= 0; --s) d(t, s) = d(t, s + 1) * a(s + 1);
  }
  return d;
}

// H ⊙ A for the block of rows first_row..first_row+n−1 of a problem whose row 0 is token t0: entry (t, s),
// s ≤ t, times λ_{first_row+t}^{(ℓ)} with ℓ = level(t0+first_row+t, t0+first_row+s); entries above the
// diagonal are dropped.
template <class S>
Mat<S> weight_by_level(const Mat<S>& a, const Mat<S>& lambda, Eigen::Index first_row, std::uint64_t t0 = 0) {
  Mat<S> h = Mat<S>::Zero(a.rows(), a.cols());
  const std::uint64_t first = t0 + static_cast<std::uint64_t>(first_row);
  for (Eigen::Index t = 0; t < a.rows(); ++t) {
    const std::uint64_t qt = first + static_cast<std::uint64_t>(t);
    for (Eigen::Index s = 0; s <= t; ++s)
      h(t, s) = a(t, s) * lambda(first_row + t, fenwick::level(qt, first + static_cast<std::uint64_t>(s)));
  }
  return h;
}

// The level at which query position `position` reads the carried bucket of t0 at level ℓ (its newest
// token is t0_ℓ − 1, t0_ℓ = t0 with its low ℓ − 1 bits cleared).
inline int carried_level_at(std::uint64_t position, std::uint64_t t0, int level) {
  const std::uint64_t newest = (t0 & ~((std::uint64_t{1} << (level - 1)) - 1)) - 1;
  return fenwick::level(position, newest);
}

// R_ℓ, row t = q_t^T [Π_{r=0..t} M_r] Z^{(ℓ)}: the reads of the carried states through the problem's own
// transitions, one T×d_v matrix per carried level. Mamba-2: the prefix products of a times Q Z; GDN: one
// delta_rule::materialized run over the values 0 from the initial state [Z^{(ℓ1)} | Z^{(ℓ2)} | …].
template <class S>
std::vector<Mat<S>> carried_reads(const Problem<S>& p) {
  std::vector<Mat<S>> reads;
  if (!p.start || p.start->level_states.empty()) return reads;
  const auto& states = p.start->level_states;
  const Eigen::Index n = static_cast<Eigen::Index>(states.size()), dv = p.dv();
  if (p.variant == Variant::mamba2) {
    Vec<S> through(p.T());
    for (Eigen::Index t = 0; t < p.T(); ++t) through(t) = t == 0 ? p.alpha(0) : S(through(t - 1) * p.alpha(t));
    for (const Mat<S>& z : states) reads.push_back(through.asDiagonal() * (p.q * z));
    return reads;
  }
  delta_rule::Problem<S> zero_values{p.q, p.k, Mat<S>::Zero(p.T(), n * dv), p.alpha, p.beta, S(1), Mat<S>(p.dk(), n * dv)};
  for (Eigen::Index i = 0; i < n; ++i) zero_values.initial_state->middleCols(i * dv, dv) = states[static_cast<std::size_t>(i)];
  const Mat<S> all = delta_rule::materialized(zero_values).o;
  for (Eigen::Index i = 0; i < n; ++i) reads.push_back(all.middleCols(i * dv, dv));
  return reads;
}

}  // namespace detail

// The materialized form (SPEC §4): O = scale (H ⊙ A) V with H(t, s) = λ_t^{(ℓ(t,s))} and
// A(t, s) = q_t^T [Π_{r=s+1..t} M_r] w_s k_s: (Q K^T) ⊙ Π a for Mamba-2; for GDN the ordered products
// of delta_rule::materialized, read off as its outputs for the values V = I_T. O(T²) and more.
// With a start, the carried states' reads R_ℓ are added, row t weighted by λ_t at the level of the
// bucket for position t0 + t.
template <class S>
Mat<S> materialized(const Problem<S>& p) {
  validate(p);
  Mat<S> a;
  if (p.variant == Variant::mamba2) {
    a = (p.q * p.k.transpose()).cwiseProduct(detail::decay_products(p.alpha));
  } else {
    const delta_rule::Problem<S> identity_values{p.q, p.k, Mat<S>::Identity(p.T(), p.T()), p.alpha, p.beta, S(1), {}};
    a = delta_rule::materialized(identity_values).o;
  }
  const std::uint64_t t0 = p.offset();
  Mat<S> o = detail::weight_by_level(a, p.lambda, 0, t0) * p.v;
  const std::vector<Mat<S>> reads = detail::carried_reads(p);
  const std::vector<int> levels = fenwick::carried_levels(t0);
  for (std::size_t i = 0; i < reads.size(); ++i)
    for (Eigen::Index t = 0; t < p.T(); ++t)
      o.row(t) += p.lambda(t, detail::carried_level_at(t0 + static_cast<std::uint64_t>(t), t0, levels[i])) * reads[i].row(t);
  return p.scale * o;
}

// One state per level and its count of units (tokens, or chunks for the chunked form). SPEC §4:
// before each unit, a level ℓ that is full (2^ℓ units) is added into level ℓ+1 and emptied; the new
// unit then goes to level 0. An empty level holds no matrix, so the memory held is what is live.
template <class S>
class LevelStack {
 public:
  LevelStack() = default;
  // The stack as the cascade leaves it before unit n, given the buckets of the n earlier units
  // (levels = fenwick::carried_levels(n), increasing, each ≥ 1): level levels[i] holds 2^{levels[i]−1}
  // units with state states[i]; level 0 is empty.
  static LevelStack carried(const std::vector<int>& levels, const std::vector<Mat<S>>& states) {
    LevelStack stack;
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const auto l = static_cast<std::size_t>(levels[i]);
      if (l < 1) throw std::logic_error("log_linear::LevelStack::carried: a carried level is >= 1");
      if (stack.counts_.size() <= l) {
        stack.counts_.resize(l + 1, 0);
        stack.states_.resize(l + 1);
      }
      stack.states_[l] = states[i];
      stack.counts_[l] = std::uint64_t{1} << (l - 1);
    }
    return stack;
  }
  void cascade() {
    for (std::size_t l = 0; l < counts_.size() && counts_[l] == (std::uint64_t{1} << l); ++l) {
      if (l + 1 == counts_.size()) {
        counts_.push_back(0);
        states_.emplace_back();
      }
      if (counts_[l + 1] == 0) states_[l + 1] = std::move(states_[l]);
      else states_[l + 1] += states_[l];
      counts_[l + 1] += counts_[l];
      states_[l] = Mat<S>();
      counts_[l] = 0;
    }
  }
  // Puts a new unit's state at level 0, which the cascade has emptied.
  void push(Mat<S> state) {
    if (counts_[0] != 0) throw std::logic_error("log_linear::LevelStack::push: level 0 is occupied (cascade first)");
    states_[0] = std::move(state);
    counts_[0] = 1;
  }
  // f(level, state) for every non-empty level, lowest first.
  template <class F>
  void for_each_live(F&& f) {
    for (std::size_t l = 0; l < counts_.size(); ++l)
      if (counts_[l] != 0) f(static_cast<int>(l), states_[l]);
  }
  template <class F>
  void for_each_live(F&& f) const {
    for (std::size_t l = 0; l < counts_.size(); ++l)
      if (counts_[l] != 0) f(static_cast<int>(l), static_cast<const Mat<S>&>(states_[l]));
  }
  std::size_t live_levels() const {
    std::size_t n = 0;
    for (auto c : counts_) n += (c != 0);
    return n;
  }
  // Bytes of the level matrices held (sizeof(S) per entry; for GMP rationals only the handles).
  std::size_t live_bytes() const {
    std::size_t b = 0;
    for (const auto& m : states_) b += static_cast<std::size_t>(m.size()) * sizeof(S);
    return b;
  }
  int highest_live_level() const {
    for (std::size_t l = counts_.size(); l-- > 0;)
      if (counts_[l] != 0) return static_cast<int>(l);
    return -1;
  }
  std::uint64_t count(std::size_t level) const { return level < counts_.size() ? counts_[level] : 0; }

 private:
  std::vector<Mat<S>> states_{1};
  std::vector<std::uint64_t> counts_{0};
};

// Streaming decode (SPEC §4, recurrent form): per token, cascade full levels, apply the token's
// transition to every level, write the token at level 0, read o = scale Σ_ℓ λ^{(ℓ)} S^{(ℓ)T} q.
template <class S>
class State {
 public:
  State(Variant variant, Eigen::Index dk, Eigen::Index dv) : variant_(variant), dk_(dk), dv_(dv) {
    if (dk < 1 || dv < 1) throw std::invalid_argument("log_linear::State: d_k and d_v must be >= 1");
  }
  // Continues after start.offset tokens from their carried level states (validated as Problem's are).
  State(Variant variant, Eigen::Index dk, Eigen::Index dv, const Start<S>& start) : State(variant, dk, dv) {
    levels_ = LevelStack<S>::carried(fenwick::carried_levels(start.offset), start.level_states);
    tokens_ = start.offset;
  }

  Vec<S> step(const Vec<S>& q, const Vec<S>& k, const Vec<S>& v, const S& alpha, const S& beta, const Vec<S>& lambda,
              const S& scale) {
    cascade();
    absorb(k, v, alpha, beta);
    return read(q, lambda, scale);
  }

  // The three parts of step, exposed so that a test can run them in a wrong order.
  void cascade() { levels_.cascade(); }

  void absorb(const Vec<S>& k, const Vec<S>& v, const S& alpha, const S& beta) {
    require(k.size() == dk_, "k must have d_k entries");
    require(v.size() == dv_, "v must have d_v entries");
    levels_.for_each_live([&](int, Mat<S>& s) { transition(s, k, alpha, beta); });
    levels_.push(variant_ == Variant::mamba2 ? Mat<S>(k * v.transpose()) : Mat<S>(k * (beta * v).transpose()));
    ++tokens_;
  }

  Vec<S> read(const Vec<S>& q, const Vec<S>& lambda, const S& scale) const {
    require(q.size() == dk_, "q must have d_k entries");
    require(lambda.size() > levels_.highest_live_level(),
            "lambda must have an entry for every live level (" + std::to_string(levels_.highest_live_level() + 1) +
                "), got " + std::to_string(lambda.size()));
    Vec<S> o = Vec<S>::Zero(dv_);
    levels_.for_each_live([&](int l, const Mat<S>& s) { o += lambda(l) * (s.transpose() * q); });
    return scale * o;
  }

  std::uint64_t tokens() const { return tokens_; }
  // The Start that continues after the tokens absorbed so far: the levels as the next cascade leaves them.
  Start<S> start() const {
    LevelStack<S> cascaded = levels_;
    cascaded.cascade();
    Start<S> out{tokens_, {}};
    cascaded.for_each_live([&](int, const Mat<S>& s) { out.level_states.push_back(s); });
    return out;
  }
  std::size_t live_levels() const { return levels_.live_levels(); }
  std::size_t live_bytes() const { return levels_.live_bytes(); }
  const LevelStack<S>& levels() const { return levels_; }

 private:
  static void require(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("log_linear::State: " + what);
  }
  // Mamba-2: S ← a S. GDN: S ← a (I − β k k^T) S, which is delta_rule's step with a zero value.
  void transition(Mat<S>& s, const Vec<S>& k, const S& alpha, const S& beta) const {
    if (variant_ == Variant::mamba2) {
      s *= alpha;
      return;
    }
    delta_rule::State<S> level(std::move(s));
    level.step(Vec<S>::Zero(dk_), k, Vec<S>::Zero(dv_), alpha, beta, S(0));
    s = level.matrix();
  }

  Variant variant_;
  Eigen::Index dk_, dv_;
  LevelStack<S> levels_;
  std::uint64_t tokens_ = 0;
};

// The state a problem starts from: its Start's, or the empty one.
template <class S>
State<S> initial_state(const Problem<S>& p) {
  return p.start ? State<S>(p.variant, p.dk(), p.dv(), *p.start) : State<S>(p.variant, p.dk(), p.dv());
}

// The recurrent form: State::step over the sequence.
template <class S>
Mat<S> serial(const Problem<S>& p) {
  validate(p);
  State<S> st = initial_state(p);
  Mat<S> o(p.T(), p.dv());
  const S no_beta(1);
  for (Eigen::Index t = 0; t < p.T(); ++t)
    o.row(t) = st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t),
                       p.variant == Variant::gdn ? p.beta(t) : no_beta, p.lambda.row(t).transpose(), p.scale)
                   .transpose();
  return o;
}

// The Start that continues a sequence after p's tokens (serial's level states after its last token,
// as the next cascade leaves them); offset = p.offset() + T.
template <class S>
Start<S> continuation_start(const Problem<S>& p) {
  validate(p);
  State<S> st = initial_state(p);
  const S no_beta(1);
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    st.cascade();
    st.absorb(p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t), p.variant == Variant::gdn ? p.beta(t) : no_beta);
  }
  return st.start();
}

// What a chunk of tokens c0..c0+n−1 does, as matrices (M_r, w_s as in the header comment):
//   attention(t, s)   = q_t^T [Π_{r=s+1..t} M_r] w_s k_s           (n×n, lower triangular)
//   query_through     : row t = q_t^T Π_{r=c0..t} M_r              (n×d_k: reads a state from before the chunk)
//   write             : column s = [Π_{r=s+1..c0+n−1} M_r] w_s k_s  (d_k×n: the chunk's own state is write·V)
//   carry(S)          = [Π_{r in chunk} M_r] S                      (a state from before, to after the chunk)
template <class S>
struct ChunkOperators {
  Variant variant = Variant::mamba2;
  Mat<S> attention, query_through, write;
  Mat<S> carry_matrix;  // GDN: Π M_r (d_k×d_k)
  S carry_scalar{};     // Mamba-2: Π a_r
  void carry(Mat<S>& state, const MatmulOperands<S>& ops = {}) const {
    if (variant == Variant::mamba2) state *= carry_scalar;
    else state = ops.product(carry_matrix, state);
  }
};

// Mamba-2 from the decay products; GDN from one delta_rule::chunked run (the UT/WY transform) on the
// chunk with initial state [I | 0] and values [0 | I]: its outputs are [query_through | attention] and
// its final state is [Π M_r | write], all linear in (initial state, values). The products that form
// them go through `ops` (Q K^T for Mamba-2; every product of delta_rule::chunked for GDN).
template <class S>
ChunkOperators<S> chunk_operators(const Problem<S>& p, Eigen::Index c0, Eigen::Index n, const MatmulOperands<S>& ops = {}) {
  ChunkOperators<S> operators;
  operators.variant = p.variant;
  const Mat<S> Q = p.q.middleRows(c0, n), K = p.k.middleRows(c0, n);
  const Vec<S> a = p.alpha.segment(c0, n);
  const Eigen::Index dk = p.dk();
  if (p.variant == Variant::mamba2) {
    const Mat<S> d = detail::decay_products(a);
    operators.attention = ops.product(Q, K.transpose()).cwiseProduct(d);
    Vec<S> through(n);  // Π_{r=c0..c0+t} a_r = a_{c0} D(t, 0)
    for (Eigen::Index t = 0; t < n; ++t) through(t) = a(0) * d(t, 0);
    operators.query_through = through.asDiagonal() * Q;
    operators.write = (d.row(n - 1).transpose().asDiagonal() * K).transpose();
    operators.carry_scalar = through(n - 1);
    return operators;
  }
  delta_rule::Problem<S> aug;
  aug.q = Q;
  aug.k = K;
  aug.v = Mat<S>::Zero(n, dk + n);
  aug.v.rightCols(n) = Mat<S>::Identity(n, n);
  aug.alpha = a;
  aug.beta = p.beta.segment(c0, n);
  aug.scale = S(1);
  Mat<S> s0 = Mat<S>::Zero(dk, dk + n);
  s0.leftCols(dk) = Mat<S>::Identity(dk, dk);
  aug.initial_state = std::move(s0);
  const SeqResult<S> r = delta_rule::chunked(aug, n, ops);
  operators.query_through = r.o.leftCols(dk);
  operators.attention = r.o.rightCols(n);
  operators.carry_matrix = r.final_state.leftCols(dk);
  operators.write = r.final_state.rightCols(n);
  return operators;
}

// The chunked form, chunk C a power of two (1, 2, 4, …), any T. Within a chunk the levels are those of
// the diagonal block, (H ⊙ A) V; states of earlier chunks sit on a Fenwick stack of chunks (chunk level
// j ≥ 1 holds 2^{j−1} chunks) and are read at token level j + log2 C (SPEC §4, chunked form).
// Every matrix product goes through `ops` (matmul_operands.h): with an operand format it is the `io`
// grade's baseline, whose rounded operands are Q and K (of A; for GDN every operand of delta_rule::
// chunked's products, there listed), H ⊙ A and V (the intra-chunk output), query_through and each level
// state (the inter-chunk reads), carry_matrix and the level state (GDN's carry), and write and V (the
// chunk's new state). The decay products, the level weights λ and the level states' sums stay in S
// (docs/gate.md "Precision grades").
//
// With a start after t0 tokens the chunks are those of the absolute positions (chunk c holds tokens
// [cC, (c+1)C)), so the first one is partial when C does not divide t0. The carried buckets above level
// log2 C are whole chunks and start the chunk stack (at chunk level ℓ − log2 C); those at levels ≤ log2 C
// lie in t0's own chunk: the chunk that finishes it reads each of them through query_through at its own
// level ℓ(t0 + t, ·), carries it, and adds it to the chunk's new state (together they are that chunk's
// tokens). Their products go through `ops` as the level states' do.
template <class S>
Mat<S> chunked(const Problem<S>& p, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  validate(p);
  if (chunk < 1 || !std::has_single_bit(static_cast<std::uint64_t>(chunk)))
    throw std::invalid_argument("log_linear::chunked: chunk size must be a power of two >= 1, got " + std::to_string(chunk));
  const int log2_chunk = std::countr_zero(static_cast<std::uint64_t>(chunk));
  const std::uint64_t t0 = p.offset();
  std::vector<int> chunk_levels, in_chunk_levels;  // the carried buckets: whole chunks, and those in t0's chunk
  std::vector<Mat<S>> chunk_states, in_chunk_states;
  const std::vector<int> carried = fenwick::carried_levels(t0);
  for (std::size_t i = 0; i < carried.size(); ++i) {
    if (carried[i] > log2_chunk) {
      chunk_levels.push_back(carried[i] - log2_chunk);
      chunk_states.push_back(p.start->level_states[i]);
    } else {
      in_chunk_levels.push_back(carried[i]);
      in_chunk_states.push_back(p.start->level_states[i]);
    }
  }
  LevelStack<S> earlier = LevelStack<S>::carried(chunk_levels, chunk_states);
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index c0 = 0; c0 < p.T();) {
    const std::uint64_t position = t0 + static_cast<std::uint64_t>(c0);
    const Eigen::Index n = std::min(static_cast<Eigen::Index>(static_cast<std::uint64_t>(chunk) - position % static_cast<std::uint64_t>(chunk)), p.T() - c0);
    earlier.cascade();
    const ChunkOperators<S> operators = chunk_operators(p, c0, n, ops);
    const Mat<S> V = p.v.middleRows(c0, n);
    Mat<S> oc = ops.product(detail::weight_by_level(operators.attention, p.lambda, c0, t0), V);
    earlier.for_each_live([&](int j, const Mat<S>& state) {
      const Mat<S> read = ops.product(operators.query_through, state);
      for (Eigen::Index t = 0; t < n; ++t) oc.row(t) += p.lambda(c0 + t, j + log2_chunk) * read.row(t);
    });
    for (std::size_t i = 0; i < in_chunk_states.size(); ++i) {
      const Mat<S> read = ops.product(operators.query_through, in_chunk_states[i]);
      for (Eigen::Index t = 0; t < n; ++t)
        oc.row(t) += p.lambda(c0 + t, detail::carried_level_at(position + static_cast<std::uint64_t>(t), t0, in_chunk_levels[i])) *
                     read.row(t);
    }
    o.middleRows(c0, n) = p.scale * oc;
    earlier.for_each_live([&](int, Mat<S>& state) { operators.carry(state, ops); });
    Mat<S> written = ops.product(operators.write, V);
    for (Mat<S>& state : in_chunk_states) {
      operators.carry(state, ops);
      written += state;
    }
    in_chunk_states.clear();
    earlier.push(std::move(written));
    c0 += n;
  }
  return o;
}

// Runs the given form (chunk and ops are used by Form::chunked only; streamed is serial: both are
// State::step).
template <class S>
Mat<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  switch (form) {
    case Form::serial:
    case Form::streamed: return serial(p);
    case Form::materialized: return materialized(p);
    case Form::chunked: return chunked(p, chunk, ops);
  }
  throw std::invalid_argument("log_linear::run: unknown form");
}

// The log-linear family (Mamba-2 and GDN variants, SPEC §4) for the batched driver and the harness
// (family.h); a head's result is its outputs.
struct Family {
  static constexpr std::string_view name = "log-linear";
  static constexpr std::array forms{Form::serial, Form::materialized, Form::chunked};
  template <class S>
  using Problem = log_linear::Problem<S>;
  template <class S>
  using Result = Mat<S>;
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return log_linear::run(p, form, chunk, ops);
  }
};
static_assert(MechanismFamily<Family>);

}  // namespace larc::ref::log_linear
