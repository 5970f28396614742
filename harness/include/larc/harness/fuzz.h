// The fuzzer (DESIGN.md "Randomized inputs", "The program"; `larc fuzz`): a deterministic random
// campaign over the registered subjects, shrinking of failing cases, and the search for the inputs
// that bring a subject closest to its tolerance.
//
// Case i of a campaign with seed S is drawn from a generator seeded by (S, i) alone: a (subject,
// dtype) pair among those the filters select, a shape with edge sizes drawn often (T = 1, T a
// multiple of the chunk and T not one, head dimensions that are not powers of two), a case seed and
// every knob of the mechanism drawn from its range (log-uniformly where Knob::log_scale). A shard j
// of n runs the indices i ≡ j (mod n), so n machines run one campaign and their merged results equal
// one unsharded run of the same indices.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "larc/harness/runner.h"
#include "larc/harness/shard.h"

namespace larc::harness {

struct CampaignConfig {
  std::uint64_t seed = 1;
  std::vector<std::string> subjects;    // subject names to draw from (empty: all)
  std::vector<std::string> mechanisms;  // mechanisms to draw from (empty: all)
  std::vector<Dtype> dtypes;            // dtypes to draw (empty: every dtype a subject takes)
  // Largest sizes drawn (a subject's own ShapeLimits lower them further).
  std::int64_t max_B = 2, max_T = 256, max_H = 2, max_K = 64, max_V = 64;
  // Knobs held at a value in every case of a mechanism that has them (`larc fuzz --knob`); the
  // others are drawn. Error searches never move them.
  KnobValues knobs;
};

// One (subject, dtype) pair a campaign draws cases for.
struct CampaignCell {
  const Subject* subject = nullptr;
  Dtype dtype = Dtype::fp32;
};

class Campaign {
 public:
  // Throws std::invalid_argument naming the filter when a name is unknown or nothing is selected.
  explicit Campaign(CampaignConfig config);
  const CampaignConfig& config() const { return config_; }
  const std::vector<CampaignCell>& cells() const { return cells_; }
  // Case `index`: a function of (config, index) only; origin "random".
  CaseSpec case_at(std::uint64_t index) const;
  // The largest T a case of `spec`'s subject may have (config and subject limits).
  std::int64_t max_T_of(const CaseSpec& spec) const;

 private:
  CampaignConfig config_;
  std::vector<CampaignCell> cells_;
};

// Why a case failed, as classes a shrunk case must keep (so shrinking does not wander from one bug
// to another): "exception", "nondeterministic", "other" (e.g. written past the end), and per output
// "unwritten", "non_finite", "out_of_range" (baseline non-finite), "tolerance", "oracle".
std::set<std::string> failure_kinds(const CaseResult& r);

struct ShrinkOutcome {
  CaseResult shrunk;   // the smallest failing case found (the original when nothing smaller fails)
  int steps = 0;       // accepted reductions
  int evaluations = 0; // cases run while shrinking
  std::vector<CaseSpec> path;  // the case each accepted reduction moved to, in order (steps of them)
};

// Shrinks a failing case: repeatedly tries, in a fixed order, T → 1, T/2, T − 1, then the same for
// B, H, K, V (each a shape `limits` accepts), then each knob → its default and halfway to it, and
// keeps the first candidate that still fails with a failure kind of the original; stops when none
// does or after `max_evaluations`. Deterministic. `run` judges a case (run_case by default; tests
// and the C interface, whose caller runs the kernel, pass their own).
using CaseJudge = std::function<CaseResult(const CaseSpec&)>;
ShrinkOutcome shrink_failure(const CaseResult& failing, const ShapeLimits& limits, int max_evaluations = 200,
                             const CaseJudge& run = {});
// The same within the limits of the failing case's subject (a registered one).
ShrinkOutcome shrink_failure(const CaseResult& failing, int max_evaluations = 200, const CaseJudge& run = {});

// --- the campaign -------------------------------------------------------------------------------

struct FuzzCase {
  std::uint64_t index = 0;
  CaseResult result;
  std::optional<ShrinkOutcome> shrink;  // set for failures
  std::string fixture;                  // where the shrunk failure was saved ("" when not saved)
};

struct CampaignRun {
  std::vector<FuzzCase> cases;  // in index order
  double seconds = 0;
  bool interrupted = false;     // RunLimits::stop ended the run before its bound
  std::size_t failures() const;
};

// Asked before each case and each shrinking step; true ends the run (a signal: `larc fuzz` on SIGINT
// or SIGTERM). The case under way is dropped whole, so every case in a run is finished.
using StopRequest = std::function<bool()>;

struct RunLimits {
  std::optional<std::uint64_t> cases;  // run the shard's indices below this
  std::optional<std::chrono::steady_clock::time_point> deadline;  // stop starting cases after this
  std::set<std::uint64_t> skip;  // indices an earlier run of the campaign finished (`--resume`)
  StopRequest stop;
};

// Called after each case: cases done so far and the case just run.
using CaseObserver = std::function<void(std::size_t done, const FuzzCase&)>;
// Saves a shrunk failure and returns where (the corpus writer of `larc fuzz --corpus`).
using FailureSaver = std::function<std::string(const FuzzCase&)>;

// Runs the shard's cases in index order within the limits (a case count or a deadline must be set),
// skipping limits.skip; failures are shrunk and handed to `save` when it is set.
CampaignRun run_campaign(const Campaign& campaign, Shard shard, const RunLimits& limits, const FailureSaver& save = {},
                         const CaseObserver& observe = {}, const CaseJudge& run = {});

// --- the search for the worst error (`larc fuzz --target error`) --------------------------------

// How close a case comes to its tolerance: the largest Judgement::worst_ratio over its outputs
// (> 1 fails); +inf when the subject threw, wrote NaN/Inf, left elements unwritten or broke another
// check; -inf when no ratio means anything (the baseline leaves the dtype's range, or the oracle
// cannot certify itself), so the search never reports such a case.
double error_score(const CaseResult& r);

struct ErrorSearch {
  CaseResult worst;            // the case with the largest error_score found
  double worst_score = -1;
  int evaluations = 0;
  int restarts = 0;            // climbs started
  int replayed = 0;            // evaluations taken from SearchLimits::recorded instead of judged
  std::vector<double> best_so_far;  // error_score of the worst case after each evaluation
  // Every evaluation in order: the case's reproduce command and its error_score (what a resumed
  // search replays: SearchLimits::recorded).
  std::vector<std::pair<std::string, double>> scores;
};

struct SearchLimits {
  int evaluations = 64;  // cases judged in all
  std::optional<std::chrono::steady_clock::time_point> deadline;
  StopRequest stop;      // ends the search; the worst case so far is its result
  // Scores an interrupted run of the same search already computed, by reproduce command (its
  // ErrorSearch::scores). The search is deterministic, so it retraces that run's steps taking these
  // scores instead of judging the cases again, and continues where the run stopped.
  std::map<std::string, double> recorded;
  // Called after each evaluation past the replayed ones (a checkpoint writer throttles itself).
  std::function<void(const ErrorSearch&)> after_each;
};

// Hill-climbing over the generator's knobs and the length T: each climb starts at a campaign case
// (restart r of shard j of n starts at case j + r·n), moves one coordinate at a time (knobs in
// [0, 1] of their range, log-scaled where log_scale; T on a log scale) by ±step, keeps a move while
// it raises error_score and doubles it along a direction that keeps improving, halves the step when
// no coordinate improves and restarts when the step is below 1/64. The case seed, subject, dtype and
// B, H, K, V stay those of the start, so a climb sees one smooth function of the knobs.
ErrorSearch hill_climb_error(const Campaign& campaign, Shard shard, const SearchLimits& limits,
                             const CaseJudge& run = {}, const CaseObserver& observe = {});
// The same number of blind samples: the worst of the shard's campaign cases, for comparison.
ErrorSearch blind_sample_error(const Campaign& campaign, Shard shard, const SearchLimits& limits,
                               const CaseJudge& run = {});

}  // namespace larc::harness
