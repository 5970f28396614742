// Oracle cost per token of the GDN serial recurrence (SPEC "GDN") on each rung of the precision
// ladder, d_k = d_v = 64: State::step (streaming decode) and delta_rule::serial (the printed
// recurrence applied as rank-one updates).
// Reports items_per_second = tokens/s and the counter ns_per_token, so rungs compare directly
// (DESIGN.md: dd_real is the default oracle, expected ~45× the cost of double).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "larc/properties/generators.h"
#include "larc/reference/delta_rule.h"
#include "larc/reference/scalar.h"

namespace {

namespace ref = larc::ref;
namespace dr = larc::ref::delta_rule;
namespace props = larc::props;

// The declared input: unit keys, moderate gates (β ∈ (0.05, 1], g ∈ [−1, 0]), d_k = d_v = 64.
// T tokens are run per benchmark iteration; slow rungs take fewer to keep one run short.
props::DeltaCase bench_case(int T) {
  props::DeltaCase c;
  c.seed = 20240607;
  c.T = T;
  c.dk = 64;
  c.dv = 64;
  c.keys = props::KeyKind::unit;
  c.gates = props::GateKind::moderate;
  return c;
}

// Counters shared by every benchmark here: tokens/s and ns/token (CPU time).
void set_token_counters(benchmark::State& st, int T) {
  st.SetItemsProcessed(st.iterations() * T);
  st.counters["ns_per_token"] = benchmark::Counter(
      1e-9 * T, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.counters["T"] = T;
}

// Streaming decode: one State::step per token, inputs already split into per-token vectors.
template <class S>
void bm_state_step(benchmark::State& st, int T) {
  const dr::Problem<S> p = props::cast_problem<S>(props::gdn_problem(bench_case(T)));
  std::vector<ref::Vec<S>> q, k, v;
  for (int t = 0; t < T; ++t) {
    q.emplace_back(p.q.row(t).transpose());
    k.emplace_back(p.k.row(t).transpose());
    v.emplace_back(p.v.row(t).transpose());
  }
  for (auto _ : st) {
    dr::State<S> state(p.dk(), p.dv());
    for (int t = 0; t < T; ++t) {
      ref::Vec<S> o = state.step(q[t], k[t], v[t], p.alpha(t), p.beta(t), p.scale);
      benchmark::DoNotOptimize(o.data());
    }
    benchmark::ClobberMemory();
  }
  set_token_counters(st, T);
}

// The whole sequence through delta_rule::serial (S_t = α_t (I − β_t k_t k_t^T) S_{t−1} + β_t k_t v_t^T).
template <class S>
void bm_serial(benchmark::State& st, int T) {
  const dr::Problem<S> p = props::cast_problem<S>(props::gdn_problem(bench_case(T)));
  for (auto _ : st) {
    ref::SeqResult<S> r = dr::serial(p);
    benchmark::DoNotOptimize(r.o.data());
    benchmark::ClobberMemory();
  }
  set_token_counters(st, T);
}

template <class S>
void register_rung(int T) {
  const std::string rung = ref::ScalarTraits<S>::name;
  benchmark::RegisterBenchmark(("gdn_state_step/" + rung).c_str(), bm_state_step<S>, T)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("gdn_serial/" + rung).c_str(), bm_serial<S>, T)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  register_rung<double>(256);
  register_rung<ref::dd>(256);
  register_rung<ref::f128>(64);
  register_rung<ref::mpfr50>(32);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
