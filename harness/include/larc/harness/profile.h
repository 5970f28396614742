// Accuracy-regression profiles (docs/gate.md "Accuracy-regression profiles"): the question a gate for
// kernel changes must answer whatever grade a kernel meets, "did this change make it less accurate?".
// A profile records, for each case and output of an accepted kernel, its error against the oracle per
// slice, e_t (tolerance.h), and the floor F_t. A later run of the same cases fails an output where
//   e_t(new) > k_reg · max_{s ∈ w(t)} e_s(recorded) + F_t      (w(t): the W slices centred on t),
// or where ‖e_{w(t)}(new)‖₂ > k_reg · ‖e_{w(t)}(recorded)‖₂ + ‖F_{w(t)}‖₂: the tolerance policy's
// criteria 3 and 4 with the recorded kernel as the baseline and centred windows (two runs of one
// kernel may be compared looking ahead; a trailing window holds one sample at t = 0). k_reg is
// calibrated on honest changes (another chunk size, accumulation order, form) so that none trips it.
//
// A profile names each case's spec and the oracle it was judged against (the oracle's method and
// ‖O‖ per output): a profile for other cases, or one whose oracle differs (the inputs or the reference
// changed), is refused with a message naming the field.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larc/harness/gate.h"
#include "larc/harness/runner.h"

namespace larc::harness {

// The factor the recorded error may grow by before a case fails (calibrated in docs/gate.md).
inline constexpr double kRegressionFactor = 2.0;

struct RegressionConfig {
  double k_reg = kRegressionFactor;
  std::int64_t window = 64;
  // When set, a case is compared with the record of this subject instead of its own (one kernel's
  // profile judging another implementation of the same cases, e.g. a rewrite under a new name).
  std::string as_subject{};
};

// The key a case is recorded under: subject, mechanism, dtype, shape, seed, knobs and origin.
std::string profile_key(const CaseSpec& spec);

// {"larc_profile": 1, "tree_hash": ..., "cases": [{"key", "spec", "oracle_method", "outputs": {name:
// {"oracle_norm", "error", "floor"}}}]}
nlohmann::json record_profile(const std::vector<CaseResult>& results, const std::string& tree_hash);

// How one output's error compares with its record.
struct RegressionCheck {
  std::string output;
  bool pass = true;
  double worst_ratio = 0;            // max over slices and windows of e(new) / (k_reg · e(recorded) + F)
  std::int64_t worst_timestep = -1;  // slice of the worst per-slice ratio
  double worst_growth = 0;           // max over slices of e_t(new) / e_t(recorded) where e_t(recorded) > 0
};

// A profile read back, indexed by case key; throws std::invalid_argument naming the field that is
// missing or malformed ("profile: cases[3].outputs.o.error: expected an array of numbers").
class Profile {
 public:
  static Profile from_json(const nlohmann::json& j);
  static Profile read(const std::string& path);  // also names the file when it cannot be read or parsed
  std::size_t size() const { return cases_.size(); }
  bool has(const CaseSpec& spec) const { return cases_.count(profile_key(spec)) > 0; }

  // Compares a result with its record, appends the violations to r.errors (clearing r.pass) and
  // returns one check per recorded output. Throws std::invalid_argument when the profile has no
  // record of the case, or the record's oracle differs from the case's (naming the field).
  std::vector<RegressionCheck> check(CaseResult& r, const RegressionConfig& config = {}) const;

 private:
  struct Output {
    double oracle_norm = 0;
    std::vector<double> error, floor;
  };
  struct Record {
    std::string oracle_method;
    std::map<std::string, Output> outputs;
  };
  std::map<std::string, Record> cases_;
};

// Throws std::invalid_argument naming the first cases of the plan's shard that `profile` has no
// record of, so that a mismatched profile is refused before any case runs.
void require_recorded(const Profile& profile, const GatePlan& plan, const Shard& shard, const std::string& as_subject = "");

}  // namespace larc::harness
