// Streaming and split sequences for DeltaNet, GDN and KLA:
//  - streamed (State::step in FLA's order) == serial (the printed order): exactly in rationals, to
//    the tolerance of delta_rule_forms_check.h in double;
//  - running a sequence in two pieces, the first piece's final state passed as the second's
//    initial_state, == one run, for every form and split points 0, 1, mid, chunk edges, T−1, T.
//    serial repeats the same arithmetic either way, so in double it must agree bit for bit.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "delta_rule_forms_check.h"

namespace {

using namespace larc::testing;
using larc::ref::rational;
using larc::ref::SeqResult;

constexpr Mechanism kMechanisms[] = {Mechanism::deltanet, Mechanism::gdn, Mechanism::kla};

// Tokens [begin, begin + len) of p, starting from `initial` (absent: zero).
template <class S>
dr::Problem<S> piece(const dr::Problem<S>& p, Eigen::Index begin, Eigen::Index len, std::optional<Mat<S>> initial) {
  return dr::Problem<S>{p.q.middleRows(begin, len), p.k.middleRows(begin, len), p.v.middleRows(begin, len),
                        p.alpha.segment(begin, len), p.beta.segment(begin, len), p.scale, std::move(initial)};
}

template <class S>
using Form = std::function<SeqResult<S>(const dr::Problem<S>&)>;

template <class S>
std::vector<std::pair<std::string, Form<S>>> forms() {
  return {{"serial", [](const dr::Problem<S>& p) { return dr::serial(p); }},
          {"materialized", [](const dr::Problem<S>& p) { return dr::materialized(p); }},
          {"chunked C=16", [](const dr::Problem<S>& p) { return dr::chunked(p, 16); }},
          {"streamed", [](const dr::Problem<S>& p) { return dr::streamed(p); }}};
}

// Runs p as p[0, split) then p[split, T) and joins the outputs.
template <class S>
SeqResult<S> run_split(const Form<S>& form, const dr::Problem<S>& p, Eigen::Index split) {
  const SeqResult<S> first = form(piece(p, 0, split, p.initial_state));
  const SeqResult<S> second = form(piece(p, split, p.T() - split, std::optional<Mat<S>>(first.final_state)));
  Mat<S> o(p.T(), p.dv());
  o << first.o, second.o;
  return {std::move(o), second.final_state};
}

std::vector<Eigen::Index> split_points(Eigen::Index T) {
  std::vector<Eigen::Index> s = {0, 1, T / 2, 16, 17, T - 1, T};
  std::erase_if(s, [T](Eigen::Index x) { return x < 0 || x > T; });
  return s;
}

TEST(DeltaRuleStreamed, EqualsSerialExactlyInRationals) {
  for (const Mechanism m : kMechanisms)
    for (const bool init : {false, true}) {
      const Shape shape{40, 3, 2, init};
      const auto p = make_rational_problem(m, shape, 71);
      const SeqResult<rational> serial = dr::serial(p), streamed = dr::streamed(p);
      EXPECT_TRUE(streamed.o == serial.o) << describe(m, shape, 71);
      EXPECT_TRUE(streamed.final_state == serial.final_state) << describe(m, shape, 71);
    }
}

TEST(DeltaRuleStreamed, EqualsSerialToPrecisionInDouble) {
  for (const Mechanism m : kMechanisms)
    for (const Eigen::Index T : {1, 65, 300})
      for (const bool init : {false, true}) {
        const Shape shape{T, 6, 4, init};
        const std::uint64_t seed = 500 + T;
        const auto p = make_problem<double>(m, shape, seed);
        expect_same_result(dr::streamed(p), dr::serial(p), magnitudes(p), growth_factor(p),
                           describe(m, shape, seed) + ": streamed vs serial");
      }
}

TEST(DeltaRuleSplitRun, EqualsOneRunExactlyInRationals) {
  for (const Mechanism m : kMechanisms)
    for (const bool init : {false, true}) {
      const Shape shape{33, 3, 2, init};
      const auto p = make_rational_problem(m, shape, 72);
      for (const auto& [name, form] : forms<rational>()) {
        const SeqResult<rational> whole = form(p);
        for (const Eigen::Index split : split_points(p.T())) {
          const SeqResult<rational> parts = run_split(form, p, split);
          const std::string what = describe(m, shape, 72) + " " + name + " split at " + std::to_string(split);
          EXPECT_TRUE(parts.o == whole.o) << what;
          EXPECT_TRUE(parts.final_state == whole.final_state) << what;
        }
      }
    }
}

TEST(DeltaRuleSplitRun, EqualsOneRunInDouble) {
  for (const Mechanism m : kMechanisms)
    for (const bool init : {false, true}) {
      const Shape shape{65, 5, 3, init};
      const std::uint64_t seed = 73;
      const auto p = make_problem<double>(m, shape, seed);
      const Magnitudes mag = magnitudes(p);
      for (const auto& [name, form] : forms<double>()) {
        const SeqResult<double> whole = form(p);
        for (const Eigen::Index split : split_points(p.T())) {
          const SeqResult<double> parts = run_split(form, p, split);
          const std::string what = describe(m, shape, seed) + " " + name + " split at " + std::to_string(split);
          if (name == "serial" || name == "streamed") {  // token by token: the same operations either way
            EXPECT_TRUE(parts.o == whole.o) << what;
            EXPECT_TRUE(parts.final_state == whole.final_state) << what;
          } else {
            expect_same_result(parts, whole, mag, growth_factor(p), what);
          }
        }
      }
    }
}

}  // namespace
