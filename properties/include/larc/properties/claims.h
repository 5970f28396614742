// The claims registry (SPEC.md "Verdicts"): every paper claim is an entry with an id, the paper, the
// statement as the paper makes it, and a check that computes a verdict with evidence. Nothing in an
// outcome is written by hand: a verdict is whatever the check computed for the given seed and trials.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace larc::props {

enum class Verdict { holds, holds_under, falsified, not_checkable_here };
std::string_view verdict_name(Verdict v);  // HOLDS, HOLDS-UNDER, FALSIFIED, NOT-CHECKABLE-HERE

struct ClaimConfig {
  std::uint64_t seed = 1;
  int trials = 0;  // 0: the claim's default
  // The committed H200 benchmark report that VLA-C10 and KLA-C6 read (h200_bench.h); relative paths
  // are taken from the working directory, so the default names the checkout's when run from its root.
  std::string h200_bench = "reports/h200/bench.json";
};

struct ClaimOutcome {
  Verdict verdict = Verdict::not_checkable_here;
  std::string evidence;        // what was computed: deviations, precision, figures
  std::string counterexample;  // shrunk reproducer when the check found one (FALSIFIED/HOLDS-UNDER)
};

struct Claim {
  std::string id;         // e.g. KLA-C1
  std::string paper;      // e.g. "KLA (Kaczmarz Linear Attention)"
  std::string statement;  // the claim as SPEC.md states it
  int default_trials = 20;
  std::function<ClaimOutcome(const ClaimConfig&)> check;
};

// Every registered claim, in ledger order.
const std::vector<Claim>& all_claims();
// nullptr when unknown.
const Claim* find_claim(std::string_view id);

// Per paper, a function that appends its claims; all_claims() calls each once.
void register_vla_claims(std::vector<Claim>& out);
void register_ccq_claims(std::vector<Claim>& out);
void register_kla_claims(std::vector<Claim>& out);
void register_log_linear_claims(std::vector<Claim>& out);
void register_hla_claims(std::vector<Claim>& out);

struct LedgerEntry {
  const Claim* claim = nullptr;
  ClaimConfig config;  // trials resolved (never 0)
  ClaimOutcome outcome;
  double seconds = 0;
  std::string reproduce() const;  // "larc claims --only ID --seed S --trials N"
};

LedgerEntry run_claim(const Claim& c, ClaimConfig cfg);

nlohmann::json ledger_json(const std::vector<LedgerEntry>& rows);
std::string ledger_markdown(const std::vector<LedgerEntry>& rows);
std::string ledger_table(const std::vector<LedgerEntry>& rows);  // terminal table

}  // namespace larc::props
