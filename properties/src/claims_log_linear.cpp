// LL-C1 and LL-C2 (SPEC §4) and the registration of LL-C1..C5. C1 enumerates the Fenwick buckets of
// every t < 2^14 and of random t < 2^62 and measures the live memory of State::step while decoding;
// C2 compares the three forms in exact rational arithmetic (and in double at T = 300) and counts the
// operations of the serial and chunked forms exactly with CountedDouble, fitted against T log T.
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "claims_log_linear_checks.h"
#include "larc/proofs_check/exact.h"
#include "larc/properties/fenwick_checks.h"
#include "larc/properties/log_linear_cases.h"
#include "larc/properties/search.h"
#include "larc/reference/op_count.h"

namespace larc::props::log_linear_claims {

namespace fw = ref::fenwick;
namespace ll = ref::log_linear;
using ref::rational;

std::string fmt(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}

Fit least_squares(const std::vector<std::vector<double>>& basis_rows, const std::vector<double>& y) {
  const std::size_t n = basis_rows.front().size();
  Eigen::MatrixXd a(basis_rows.size(), n);
  Eigen::VectorXd b(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    for (std::size_t j = 0; j < n; ++j) a(i, j) = basis_rows[i][j] / y[i];  // relative residuals
    b(i) = 1;
  }
  const Eigen::VectorXd c = a.colPivHouseholderQr().solve(b);
  Fit f;
  f.coef.assign(c.data(), c.data() + n);
  for (std::size_t i = 0; i < y.size(); ++i) f.max_rel_residual = std::max(f.max_rel_residual, std::abs((a.row(i) * c)(0) - 1));
  return f;
}

namespace {

// ---- C1 -------------------------------------------------------------------------------------------

const LevelFunction kLevel = [](std::uint64_t t, std::uint64_t s) { return fw::level(t, s); };

struct DecodeMemory {
  std::vector<std::size_t> max_live, max_bytes;  // at T = 2^k, k = 0..kMax
  bool matches_buckets = true;                   // live levels == popcount(t) + 1 at every t
};

DecodeMemory measure_decode_memory(ll::Variant variant, int log2_T, Eigen::Index d) {
  ll::State<double> st(variant, d, d);
  Rng rng(17);
  const Mat<double> q = gaussian(rng, 1, d, 1.0), k = unit_rows(rng, 1, d), v = gaussian(rng, 1, d, 1.0);
  const Vec<double> lambda = Vec<double>::Ones(log2_T + 1);
  DecodeMemory m;
  std::size_t live = 0, bytes = 0;
  for (std::uint64_t t = 0; t < (std::uint64_t{1} << log2_T); ++t) {
    st.step(q.row(0).transpose(), k.row(0).transpose(), v.row(0).transpose(), 0.99, 0.5, lambda, 1.0);
    m.matches_buckets = m.matches_buckets && st.live_levels() == static_cast<std::size_t>(fw::live_levels(t));
    live = std::max(live, st.live_levels());
    bytes = std::max(bytes, st.live_bytes());
    if (std::has_single_bit(t + 1)) {
      m.max_live.push_back(live);
      m.max_bytes.push_back(bytes);
    }
  }
  return m;
}

ClaimOutcome ll_c1_impl(const ClaimConfig& cfg) {
  std::ostringstream ev;
  std::optional<std::string> failure;
  // Every prefix t < 2^14, every token probed for t < 2^11.
  for (std::uint64_t t = 0; t < (1u << 14) && !failure; ++t)
    failure = check_buckets(t, fw::buckets(t), kLevel, t < (1u << 11) ? t + 1 : 16);
  // Random t < 2^62 (RapidCheck draws and shrinks t; all magnitudes through a random shift).
  auto gen = rc::gen::map(rc::gen::pair(rc::gen::arbitrary<std::uint64_t>(), rc::gen::inRange(2, 64)),
                          [](std::pair<std::uint64_t, int> x) { return x.first >> x.second; });
  auto cx = failure ? std::nullopt : find_counterexample(gen, cfg.seed, cfg.trials, [](std::uint64_t t) {
    return check_buckets(t, fw::buckets(t), kLevel, 32);
  });
  if (cx) failure = "t=" + std::to_string(cx->value) + ": " + cx->failure;

  // The level count ⌈log2 T⌉ + 1 against the levels a length-T sequence touches (T ≤ 2^14 by
  // enumeration; above, the largest level touched is bit_width(T − 1), since query t's highest level is
  // bit_width(t)), both against ⌈log2 T⌉ computed by doubling. And the slots a decoder must hold to
  // answer query T after T tokens: level_count(T + 1).
  std::set<int> touched;
  int count_mismatches = 0, decoder_extra = 0, decoder_extra_not_pow2 = 0;
  for (std::uint64_t T = 1; T <= (1u << 14); ++T) {
    for (const auto& b : fw::buckets(T - 1)) touched.insert(b.level);
    const int want = level_count_by_doubling(T);
    count_mismatches += static_cast<int>(touched.size()) != want || fw::level_count(T) != want;
    if (fw::level_count(T + 1) != want) {
      ++decoder_extra;
      decoder_extra_not_pow2 += !std::has_single_bit(T);
    }
  }
  Rng rng(cfg.seed);
  int random_T_checked = 0;
  for (int i = 0; i < cfg.trials; ++i) {
    const std::uint64_t T = 1 + (rng.bits() >> (2 + rng.integer(0, 61)));
    count_mismatches += static_cast<int>(std::bit_width(T - 1)) + 1 != level_count_by_doubling(T);
    ++random_T_checked;
  }
  for (int n = 0; n < 62; ++n)
    for (std::uint64_t T : {(std::uint64_t{1} << n) - 1, std::uint64_t{1} << n, (std::uint64_t{1} << n) + 1})
      if (T >= 1 && T < fw::kPositionLimit) count_mismatches += fw::level_count(T) != level_count_by_doubling(T);

  // Decoding memory, measured.
  const int log2_T = 16;
  const Eigen::Index d = 4;
  const DecodeMemory mamba = measure_decode_memory(ll::Variant::mamba2, log2_T, d);
  const DecodeMemory gdn = measure_decode_memory(ll::Variant::gdn, log2_T, d);
  bool log_growth = mamba.matches_buckets && gdn.matches_buckets;
  for (int k = 0; k <= log2_T; ++k) {
    const std::size_t want_bytes = static_cast<std::size_t>(k + 1) * d * d * sizeof(double);
    log_growth = log_growth && mamba.max_live[k] == static_cast<std::size_t>(k + 1) && gdn.max_live[k] == mamba.max_live[k] &&
                 mamba.max_bytes[k] == want_bytes && gdn.max_bytes[k] == want_bytes;
  }

  ev << "Buckets: disjoint, covering [0, t], level ℓ holding 2^{ℓ−1} tokens iff bit ℓ−1 of t is set, level(t, s) equal "
        "to the bucket's level (every token for t < 2^11, 32 spread probes per bucket above) and popcount(t) + 1 ≤ "
        "⌊log2 t⌋ + 2 buckets: checked for every t < 2^14 and " << cfg.trials << " random t < 2^62 (all magnitudes): "
     << (failure ? "FAILED" : "no counterexample") << ". Level count ⌈log2 T⌉ + 1 (bit_width(T − 1) + 1) equals the "
        "number of distinct levels a length-T sequence touches for every T ≤ 2^14 and equals ⌈log2 T⌉ + 1 computed by "
        "doubling for " << random_T_checked << " random T < 2^62 and every 2^n − 1, 2^n, 2^n + 1: "
     << (count_mismatches == 0 ? "exact, no off-by-one" : std::to_string(count_mismatches) + " MISMATCHES")
     << ". Off by one elsewhere: a decoder that has absorbed T tokens and must answer query T needs level_count(T + 1) "
        "= ⌊log2 T⌋ + 2 level slots, one more than ⌈log2 T⌉ + 1 at " << decoder_extra << " of the T ≤ 2^14, "
     << (decoder_extra_not_pow2 == 0 ? "exactly the powers of two" : "NOT only at powers of two")
     << " (FLA's chunk kernel allocates MAX_LEVEL + 2 final-state levels for this reason). Decoding memory measured "
        "with State::step (d_k = d_v = " << d << ", double, Mamba-2 and GDN, T up to 2^" << log2_T << "): live level "
        "states = popcount(t) + 1 at every t (" << (mamba.matches_buckets && gdn.matches_buckets ? "yes" : "NO")
     << "), the largest over a length-T run is log2 T + 1 at T = 2^k: T = 2^4: " << mamba.max_live[4] << " states, "
     << mamba.max_bytes[4] << " B; 2^8: " << mamba.max_live[8] << ", " << mamba.max_bytes[8] << " B; 2^12: "
     << mamba.max_live[12] << ", " << mamba.max_bytes[12] << " B; 2^16: " << mamba.max_live[16] << ", "
     << mamba.max_bytes[16] << " B (= (log2 T + 1) d_k d_v · 8 B at every k: " << (log_growth ? "yes" : "NO")
     << "), against " << (std::size_t{1} << 16) * 2 * d * sizeof(double) << " B for a key/value cache at T = 2^16.";
  ClaimOutcome out;
  out.evidence = ev.str();
  if (failure || count_mismatches != 0 || !log_growth) {
    out.verdict = Verdict::falsified;
    out.counterexample = failure ? *failure
                                 : (count_mismatches ? "level count mismatches (see evidence)" : "decode memory not (log2 T + 1) states");
  } else {
    out.verdict = Verdict::holds;
  }
  return out;
}

// ---- C2 -------------------------------------------------------------------------------------------

// Which form disagrees with serial, and by how much, on an exact problem.
std::optional<std::string> exact_forms_disagreement(const ll::Problem<rational>& p) {
  const Mat<rational> want = ll::serial(p);
  auto compare = [&](const Mat<rational>& got, const std::string& form) -> std::optional<std::string> {
    const rational r = proofs::max_abs(Mat<rational>(got - want));
    if (r == 0) return std::nullopt;
    return form + " vs serial: " + proofs::describe_residual(r);
  };
  if (auto f = compare(ll::materialized(p), "materialized")) return f;
  for (Eigen::Index c = 1; c <= 64; c *= 2)
    if (auto f = compare(ll::chunked(p, c), "chunked C=" + std::to_string(c))) return f;
  return std::nullopt;
}

rc::Gen<LogLinearCase> gen_exact_case() {
  return rc::gen::build<LogLinearCase>(
      rc::gen::set(&LogLinearCase::seed, rc::gen::arbitrary<std::uint64_t>()),
      rc::gen::set(&LogLinearCase::T, rc::gen::inRange(1, 25)), rc::gen::set(&LogLinearCase::dk, rc::gen::inRange(1, 4)),
      rc::gen::set(&LogLinearCase::dv, rc::gen::inRange(1, 4)),
      rc::gen::set(&LogLinearCase::variant,
                   rc::gen::map(rc::gen::inRange(0, 2), [](int i) { return ll::Variant(i); })),
      rc::gen::set(&LogLinearCase::extra_levels, rc::gen::inRange(0, 3)));
}

// Exact operation counts of one form at length T (d_k = d_v = d).
std::uint64_t count_form_ops(ll::Variant variant, int T, int d, ref::Form form, Eigen::Index chunk) {
  const auto p = cast_log_linear_problem<ref::CountedDouble>(log_linear_problem({3, T, d, d, variant}));
  return ref::count_ops([&] { ll::run(p, form, chunk); });
}

ClaimOutcome ll_c2_impl(const ClaimConfig& cfg) {
  std::ostringstream ev;
  auto cx = find_counterexample(gen_exact_case(), cfg.seed, cfg.trials, [](const LogLinearCase& c) {
    return exact_forms_disagreement(rational_log_linear_problem(c));
  });
  ev << "Exact: materialized, serial (State::step) and chunked at every C ∈ {1, 2, 4, …, 64} on " << cfg.trials
     << " random rational problems (T ≤ 24, d_k, d_v ≤ 3, rational decays, steps and level scales, spare λ columns, "
        "Mamba-2 and GDN): " << (cx ? "DISAGREE" : "equal, residual 0") << ". ";
  double worst = 0;
  for (ll::Variant variant : {ll::Variant::mamba2, ll::Variant::gdn}) {
    const auto p = log_linear_problem({cfg.seed, 300, 8, 8, variant, GateKind::moderate});
    const Mat<double> s = ll::serial(p);
    const double scale = s.cwiseAbs().maxCoeff();
    worst = std::max(worst, (ll::materialized(p) - s).cwiseAbs().maxCoeff() / scale);
    for (Eigen::Index c = 1; c <= 64; c *= 2) worst = std::max(worst, (ll::chunked(p, c) - s).cwiseAbs().maxCoeff() / scale);
  }
  ev << "Double, T = 300, d = 8, both variants, every C: largest deviation from serial " << fmt(worst) << " of max|o|. ";

  // Cost: exact operation counts. Fitted as a T log2 T + b T at T = 2^8..2^13 (relative least squares),
  // and ops/(T log2 T) must stay bounded (not grow) over T ∈ {2^8, 3·2^7, …, 2^13, 3·2^12}.
  const int d = 4;
  bool t_log_t = true;
  for (ll::Variant variant : {ll::Variant::mamba2, ll::Variant::gdn}) {
    for (auto [form, chunk] : {std::pair{ref::Form::serial, Eigen::Index{1}}, std::pair{ref::Form::chunked, Eigen::Index{16}}}) {
      std::vector<double> y;
      std::vector<std::vector<double>> tlogt, linear;
      double first_ratio = 0, largest_late_ratio = 0;
      for (int k = 8; k <= 13; ++k) {
        for (int T : {1 << k, 3 << (k - 1)}) {
          const double ops = double(count_form_ops(variant, T, d, form, chunk));
          const double ratio = ops / (T * std::log2(double(T)));
          if (first_ratio == 0) first_ratio = ratio;
          if (k >= 11) largest_late_ratio = std::max(largest_late_ratio, ratio);
          if (T != 1 << k) continue;
          y.push_back(ops);
          tlogt.push_back({T * std::log2(double(T)), double(T)});
          linear.push_back({double(T)});
        }
      }
      const Fit f = least_squares(tlogt, y), lin = least_squares(linear, y);
      const bool ok = f.coef[0] > 0 && f.max_rel_residual < 0.01 && lin.max_rel_residual > 2 * f.max_rel_residual &&
                      largest_late_ratio <= first_ratio;
      t_log_t = t_log_t && ok;
      ev << ll::variant_name(variant) << " " << ref::form_name(form) << (form == ref::Form::chunked ? " C=16" : "")
         << ": ops(T) ≈ " << fmt(f.coef[0]) << " T log2 T + " << fmt(f.coef[1]) << " T (max relative residual "
         << fmt(f.max_rel_residual) << "; a fit c·T alone leaves " << fmt(lin.max_rel_residual) << "); ops(8192) = "
         << fmt(y.back()) << "; ops/(T log2 T) " << fmt(first_ratio) << " at T = 256, at most " << fmt(largest_late_ratio)
         << " for T ≥ 2048. ";
    }
  }
  const std::uint64_t m1 = count_form_ops(ll::Variant::mamba2, 256, d, ref::Form::materialized, 1),
                      m2 = count_form_ops(ll::Variant::mamba2, 512, d, ref::Form::materialized, 1);
  ev << "For contrast the materialized form grows ×" << fmt(double(m2) / double(m1)) << " from T = 256 to 512 (O(T²)). "
     << "(d_k = d_v = " << d << ", exact counts with CountedDouble.) Wall clock, chunked C = 64, "
        "double, d = 16, best of 3 (informative, not the verdict): ";
  for (ll::Variant variant : {ll::Variant::mamba2, ll::Variant::gdn}) {
    for (int T : {1024, 4096, 16384}) {
      const auto p = log_linear_problem({cfg.seed, T, 16, 16, variant});
      double best = 1e300;
      for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        ll::chunked(p, 64);
        best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      ev << ll::variant_name(variant) << " T = " << T << ": " << fmt(best / T) << " µs/token; ";
    }
  }
  ev << "Training (backward pass) is not modelled: the forward forms are what is counted.";
  ClaimOutcome out;
  out.evidence = ev.str();
  if (cx) {
    out.verdict = Verdict::falsified;
    out.counterexample = "case " + cx->value.describe() + ": " + cx->failure + " (exact rational arithmetic)";
  } else if (!t_log_t) {
    out.verdict = Verdict::falsified;
    out.counterexample = "operation counts do not fit a T log T + b T (see evidence)";
  } else {
    out.verdict = Verdict::holds;
  }
  return out;
}

}  // namespace

ClaimOutcome ll_c1(const ClaimConfig& cfg) { return ll_c1_impl(cfg); }
ClaimOutcome ll_c2(const ClaimConfig& cfg) { return ll_c2_impl(cfg); }

}  // namespace larc::props::log_linear_claims

namespace larc::props {

void register_log_linear_claims(std::vector<Claim>& out) {
  using namespace log_linear_claims;
  out.push_back({"LL-C1", kPaper,
                 "The Fenwick hierarchy partitions each prefix into O(log T) disjoint buckets; the state grows as "
                 "O(log T) and decoding memory is O(log T).",
                 20000, ll_c1});
  out.push_back({"LL-C2", kPaper,
                 "Training costs O(T log T); the chunked algorithm computes the same function as the recurrence (and as "
                 "the materialised form), for the Mamba-2 and the GDN variants.",
                 40, ll_c2});
  out.push_back({"LL-C3", kPaper,
                 "At initialisation softplus(0.54) ≈ 1.0, so the MLP is a near-identity transformation that matches the "
                 "baseline's behaviour before any adaptive pattern is learned.",
                 200, ll_c3});
  out.push_back({"LL-C4", kPaper,
                 "Softplus lets each level scale independently; softmax forces the levels to compete (weights sum to one).",
                 200, ll_c4});
  out.push_back({"LL-C5", kPaper,
                 "The MLP adds a negligible number of parameters (< 0.007 % of the model) and leaves the O(T log T) / "
                 "O(log T) complexities unchanged.",
                 1, ll_c5});
}

}  // namespace larc::props
