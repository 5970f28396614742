// The claims machinery: counterexample search shrinks, the ledger renders every field, ids are unique.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "larc/properties/claims.h"
#include "larc/properties/rc_generators.h"
#include "larc/properties/search.h"

using namespace larc::props;

TEST(Search, FindsAndShrinksToTheSmallestFailingCase) {
  // Fails whenever T ≥ 17 and d_k ≥ 3: the shrunk case must be exactly T = 17, d_k = 3.
  auto cx = find_counterexample(gen_delta_case(), 42, 200, [](const DeltaCase& c) -> std::optional<std::string> {
    if (c.T >= 17 && c.dk >= 3) return "too big";
    return std::nullopt;
  });
  ASSERT_TRUE(cx.has_value());
  EXPECT_EQ(cx->value.T, 17);
  EXPECT_EQ(cx->value.dk, 3);
  EXPECT_GT(cx->shrink_steps, 0);
}

TEST(Search, SameSeedSameCases) {
  std::vector<std::string> a, b;
  find_counterexample(gen_delta_case(), 9, 20, [&](const DeltaCase& c) { a.push_back(c.describe()); return std::optional<std::string>{}; });
  find_counterexample(gen_delta_case(), 9, 20, [&](const DeltaCase& c) { b.push_back(c.describe()); return std::optional<std::string>{}; });
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 20u);
}

TEST(Search, NoCounterexampleWhenThePropertyHolds) {
  auto cx = find_counterexample(gen_delta_case(), 1, 50, [](const DeltaCase&) { return std::optional<std::string>{}; });
  EXPECT_FALSE(cx.has_value());
}

TEST(Generators, ACaseAlwaysExpandsToTheSameInputs) {
  DeltaCase c{123, 10, 4, 3, KeyKind::near_collinear, GateKind::hard_decay, true};
  const auto p1 = gdn_problem(c), p2 = gdn_problem(c);
  EXPECT_EQ(p1.k, p2.k);
  EXPECT_EQ(p1.alpha, p2.alpha);
  EXPECT_EQ(*p1.initial_state, *p2.initial_state);
}

TEST(Registry, IdsAreUniqueAndEveryClaimHasAStatementAndCheck) {
  std::set<std::string> ids;
  for (const Claim& c : all_claims()) {
    EXPECT_TRUE(ids.insert(c.id).second) << c.id;
    EXPECT_FALSE(c.statement.empty()) << c.id;
    EXPECT_TRUE(static_cast<bool>(c.check)) << c.id;
  }
  EXPECT_EQ(find_claim("NOPE-C0"), nullptr);
}

TEST(Ledger, JsonAndMarkdownCarryEveryField) {
  Claim fake{"TEST-C1", "Test paper", "A | statement. Second sentence.", 3,
             [](const ClaimConfig& cfg) {
               return ClaimOutcome{Verdict::falsified, "computed " + std::to_string(cfg.trials), "x = 1"};
             }};
  std::vector<LedgerEntry> rows{run_claim(fake, {77, 0})};
  const auto j = ledger_json(rows);
  const auto& c = j.at("claims").at(0);
  EXPECT_EQ(c.at("id"), "TEST-C1");
  EXPECT_EQ(c.at("verdict"), "FALSIFIED");
  EXPECT_EQ(c.at("evidence"), "computed 3");
  EXPECT_EQ(c.at("seed"), 77);
  EXPECT_EQ(c.at("reproduce"), "larc claims --only TEST-C1 --seed 77 --trials 3");
  EXPECT_EQ(c.at("counterexample"), "x = 1");
  const std::string md = ledger_markdown(rows);
  EXPECT_THAT(md, ::testing::HasSubstr("| [TEST-C1](#test-c1) | Test paper | FALSIFIED | A \\| statement. |"));
  EXPECT_THAT(md, ::testing::HasSubstr("**Counterexample.** x = 1"));
}
