#include "larc/harness/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace larc::harness {

namespace {
constexpr int kProfileVersion = 1;
// Two oracles of the same case agree to the last bits; anything more is another oracle.
constexpr double kOracleAgreement = 1e-12;

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

[[noreturn]] void refuse(const std::string& field, const std::string& what) {
  throw std::invalid_argument("profile: " + field + ": " + what);
}

const nlohmann::json& field_of(const nlohmann::json& j, const std::string& path, const std::string& key) {
  if (!j.is_object() || !j.contains(key)) refuse(path + "." + key, "missing");
  return j.at(key);
}

std::vector<double> numbers_of(const nlohmann::json& j, const std::string& path) {
  if (!j.is_array()) refuse(path, "expected an array of numbers");
  std::vector<double> v;
  v.reserve(j.size());
  for (const auto& x : j) {
    if (!x.is_number()) refuse(path, "expected an array of numbers");
    v.push_back(x.get<double>());
  }
  return v;
}
}  // namespace

std::string profile_key(const CaseSpec& s) {
  std::string knobs;
  for (const auto& [name, value] : s.knobs) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s=%.17g", name.c_str(), value);
    if (!knobs.empty()) knobs += ',';
    knobs += buf;
  }
  // A fixture is named by its file name, so a profile recorded in one checkout holds in another.
  const std::string origin =
      s.origin == "grid" || s.origin == "random" ? s.origin : std::filesystem::path(s.origin).filename().string();
  return s.subject + " " + s.mechanism + " " + std::string(ref::dtype_name(s.dtype)) + " [" + s.shape.str() + "] seed " +
         std::to_string(s.seed) + " {" + knobs + "} " + origin;
}

nlohmann::json record_profile(const std::vector<CaseResult>& results, const std::string& tree_hash) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& r : results) {
    nlohmann::json outputs = nlohmann::json::object();
    for (const Judgement& j : r.outputs)
      outputs[j.output] = {{"oracle_norm", j.oracle_norm}, {"error", j.slice_error}, {"floor", j.slice_floor}};
    cases.push_back({{"key", profile_key(r.spec)}, {"pass", r.pass}, {"oracle_method", r.oracle_method},
                     {"outputs", outputs}});
  }
  return {{"larc_profile", kProfileVersion}, {"tree_hash", tree_hash}, {"cases", cases}};
}

Profile Profile::from_json(const nlohmann::json& j) {
  const nlohmann::json& version = field_of(j, "", "larc_profile");
  if (!version.is_number_integer() || version.get<int>() != kProfileVersion)
    refuse("larc_profile", "expected version " + std::to_string(kProfileVersion) + ", got " + version.dump());
  const nlohmann::json& cases = field_of(j, "", "cases");
  if (!cases.is_array()) refuse("cases", "expected an array");
  Profile p;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string at = "cases[" + std::to_string(i) + "]";
    const nlohmann::json& key = field_of(cases[i], at, "key");
    if (!key.is_string()) refuse(at + ".key", "expected a string");
    Record rec;
    const nlohmann::json& method = field_of(cases[i], at, "oracle_method");
    if (!method.is_string()) refuse(at + ".oracle_method", "expected a string");
    rec.oracle_method = method.get<std::string>();
    const nlohmann::json& outputs = field_of(cases[i], at, "outputs");
    if (!outputs.is_object() || outputs.empty()) refuse(at + ".outputs", "expected an object with one entry per output");
    for (const auto& [name, o] : outputs.items()) {
      const std::string oat = at + ".outputs." + name;
      Output out;
      const nlohmann::json& norm = field_of(o, oat, "oracle_norm");
      if (!norm.is_number()) refuse(oat + ".oracle_norm", "expected a number");
      out.oracle_norm = norm.get<double>();
      out.error = numbers_of(field_of(o, oat, "error"), oat + ".error");
      out.floor = numbers_of(field_of(o, oat, "floor"), oat + ".floor");
      if (out.error.size() != out.floor.size() || out.error.empty())
        refuse(oat, "error and floor must have the same number of slices (at least one)");
      rec.outputs.emplace(name, std::move(out));
    }
    if (!p.cases_.emplace(key.get<std::string>(), std::move(rec)).second)
      refuse(at + ".key", "the case '" + key.get<std::string>() + "' is recorded twice");
  }
  return p;
}

Profile Profile::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("profile: cannot read " + path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("profile: " + path + " is not JSON (" + e.what() + ")");
  }
  try {
    return from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(e.what()) + " (in " + path + ")");
  }
}

std::vector<RegressionCheck> Profile::check(CaseResult& r, const RegressionConfig& cfg) const {
  CaseSpec recorded_as = r.spec;
  if (!cfg.as_subject.empty()) recorded_as.subject = cfg.as_subject;
  const std::string key = profile_key(recorded_as);
  const auto rec = cases_.find(key);
  if (rec == cases_.end())
    throw std::invalid_argument("profile: no record of the case '" + key + "' (record one with --record-profile)");
  std::vector<RegressionCheck> checks;
  for (const auto& recorded : rec->second.outputs) {
    const std::string& name = recorded.first;
    const Output& was = recorded.second;
    const auto j = std::find_if(r.outputs.begin(), r.outputs.end(), [&name](const Judgement& x) { return x.output == name; });
    if (j == r.outputs.end()) refuse(key + ": outputs." + name, "recorded, but this run has no such output");
    if (std::fabs(j->oracle_norm - was.oracle_norm) > kOracleAgreement * std::max(1.0, was.oracle_norm))
      refuse(key + ": outputs." + name + ".oracle_norm",
             "the oracle differs from the recorded one (" + num(j->oracle_norm) + " against " + num(was.oracle_norm) +
                 "): the inputs or the reference changed since the profile was recorded");
    if (j->slice_error.size() != was.error.size())
      refuse(key + ": outputs." + name + ".error", "recorded " + std::to_string(was.error.size()) + " slices, this run has " +
                                                       std::to_string(j->slice_error.size()));
    RegressionCheck c;
    c.output = name;
    const std::vector<double>& now = j->slice_error;
    const auto W = static_cast<std::size_t>(std::max<std::int64_t>(1, cfg.window));
    std::size_t violations = 0;
    for (std::size_t t = 0; t < now.size(); ++t) {
      // The window of W slices centred on t (clamped to the sequence): unlike the grade's trailing
      // window, a profile compares two runs of the same kernel and may look ahead, so the first
      // timesteps get a full window of recorded samples too.
      const std::size_t w0 = t >= W / 2 ? std::min(t - W / 2, now.size() > W ? now.size() - W : 0) : 0;
      const std::size_t w1 = std::min(now.size(), w0 + W) - 1;
      double recorded_max = 0, wy = 0, wr = 0, wf = 0;
      for (std::size_t s = w0; s <= w1; ++s) {
        recorded_max = std::max(recorded_max, was.error[s]);
        wy += now[s] * now[s], wr += was.error[s] * was.error[s], wf += was.floor[s] * was.floor[s];
      }
      const double tol_t = cfg.k_reg * recorded_max + was.floor[t];
      const double ratio_t = now[t] == 0 ? 0 : now[t] / tol_t;
      if (ratio_t > c.worst_ratio || c.worst_timestep < 0) {
        c.worst_timestep = static_cast<std::int64_t>(t);
        c.worst_ratio = std::max(c.worst_ratio, ratio_t);
      }
      if (was.error[t] > 0) c.worst_growth = std::max(c.worst_growth, now[t] / was.error[t]);
      if (ratio_t > 1 && ++violations <= 3)
        r.errors.push_back(name + ": accuracy regression at " + (now.size() == 1 ? std::string("the whole tensor") : "timestep " + std::to_string(t)) +
                           ": error " + num(now[t]) + " > " + num(cfg.k_reg) + " × recorded " + num(recorded_max) +
                           " + floor " + num(was.floor[t]));
      {
        const double tol_w = cfg.k_reg * std::sqrt(wr) + std::sqrt(wf);
        const double ratio_w = wy == 0 ? 0 : std::sqrt(wy) / tol_w;
        c.worst_ratio = std::max(c.worst_ratio, ratio_w);
        if (ratio_w > 1 && ++violations <= 3)
          r.errors.push_back(name + ": accuracy regression over timesteps " + std::to_string(w0) + ".." + std::to_string(w1) +
                             ": window error " + num(std::sqrt(wy)) + " > " + num(cfg.k_reg) + " × recorded " +
                             num(std::sqrt(wr)) + " + floor");
      }
    }
    c.pass = violations == 0;
    j->profile_ratio = c.worst_ratio;
    j->profile_growth = c.worst_growth;
    if (!c.pass) {
      r.pass = false;
      r.errors.push_back(name + ": error grew up to " + num(c.worst_growth) + "× the recorded one (worst at " +
                         (now.size() == 1 ? std::string("the whole tensor") : "timestep " + std::to_string(c.worst_timestep)) +
                         ", " + num(c.worst_ratio) + "× the regression tolerance)");
    }
    checks.push_back(c);
  }
  return checks;
}

void require_recorded(const Profile& profile, const GatePlan& plan, const Shard& shard, const std::string& as_subject) {
  std::size_t missing = 0;
  std::string first;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    if (!shard.holds(i)) continue;
    const GateGroup& g = plan.groups[i];
    CaseSpec spec = g.fixture ? g.fixture->spec : g.spec;
    spec.knobs = find_mechanism(spec.mechanism).resolve_knobs(spec.knobs);
    for (const Subject* s : g.subjects) {
      spec.subject = as_subject.empty() ? s->name : as_subject;
      if (profile.has(spec)) continue;
      if (++missing <= 3) first += (first.empty() ? "" : "; ") + profile_key(spec);
    }
  }
  if (missing)
    throw std::invalid_argument("--against: the profile has no record of " + std::to_string(missing) +
                                " of the cases to run (first: " + first +
                                "); it was recorded for other cases (record one with --record-profile)");
}

}  // namespace larc::harness
