#include "larc/harness/fuzz_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "larc/harness/fixture.h"
#include "larc/harness/gate.h"

namespace larc::harness {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The policy the fuzzer's cases are judged under: run_case's default (fuzz.cpp, judge_with).
const ToleranceConfig kFuzzPolicy{};

nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }
double number_or(const nlohmann::json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it == j.end() || !it->is_number() ? fallback : it->get<double>();
}

std::string filters_of(const CampaignConfig& c) {
  std::string s;
  for (const std::string& x : c.subjects) s += " --subject " + x;
  for (const std::string& x : c.mechanisms) s += " --mechanism " + x;
  for (Dtype d : c.dtypes) s += " --dtype " + std::string(ref::dtype_name(d));
  return s;
}

std::string joined(const std::vector<std::string>& v, std::size_t at_most) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < at_most; ++i) s += (i ? "\n" : "") + v[i];
  return s;
}

// A file name for a case: its subject, mechanism, dtype, shape, seed and a hash of its knobs, so two
// failures that shrink to the same case land in one file.
std::string fixture_name(const CaseSpec& s) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : nlohmann::json(s.knobs).dump()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::string name = s.subject + "-" + s.mechanism + "-" + std::string(ref::dtype_name(s.dtype)) + "-" + s.shape.str() +
                     "-seed" + std::to_string(s.seed) + "-" + std::to_string(h % 0xffffffffull);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = c == ',' ? 'x' : '_';
  return name + ".safetensors";
}

Shard shard_of(const nlohmann::json& report, const std::string& name) {
  if (!report.contains("shard") || !report["shard"].is_string())
    throw std::invalid_argument(name + ": no \"shard\" (not a larc fuzz report)");
  return parse_shard(report["shard"].get<std::string>(), name + ": \"shard\"");
}

// The first key whose value differs between two campaign objects.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b) {
  for (const auto& [k, v] : a.items())
    if (!b.contains(k) || b[k] != v) return k + " (" + v.dump() + " vs " + (b.contains(k) ? b[k].dump() : "absent") + ")";
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) return k + " (absent vs " + v.dump() + ")";
  return "";
}

Judgement judgement_of(const nlohmann::json& j) {
  Judgement o;
  o.output = j.at("output").get<std::string>();
  o.dtype = parse_dtype(j.at("dtype").get<std::string>());
  o.pass = j.at("pass").get<bool>();
  o.max_rel_err = number_or(j, "max_rel_err", kNaN);
  o.baseline_rel_err = number_or(j, "baseline_rel_err", kNaN);
  o.rel_rms = number_or(j, "rel_rms", kNaN);
  o.baseline_rel_rms = number_or(j, "baseline_rel_rms", kNaN);
  o.max_abs_err = number_or(j, "max_abs_err", kNaN);
  o.baseline_max_abs_err = number_or(j, "baseline_max_abs_err", kNaN);
  o.worst_ratio = number_or(j, "worst_ratio", kNaN);
  o.worst_timestep = j.at("worst_timestep").get<std::int64_t>();
  o.worst_coordinate = j.at("worst_coordinate").get<std::vector<std::int64_t>>();
  o.max_ulps = number_or(j, "max_ulps", kNaN);
  o.cosine = number_or(j, "cosine", kNaN);
  o.whole_tensor_ratio = number_or(j, "whole_tensor_ratio", kNaN);
  o.unwritten = j.at("unwritten").get<std::int64_t>();
  o.non_finite = j.at("non_finite").get<std::int64_t>();
  o.baseline_non_finite = j.at("baseline_non_finite").get<std::int64_t>();
  o.timestep_violations = j.at("timestep_violations").get<std::int64_t>();
  o.window_violations = j.at("window_violations").get<std::int64_t>();
  o.oracle_margin = number_or(j, "oracle_margin", kInf);
  o.oracle_certified = j.at("oracle_certified").get<bool>();
  return o;
}

nlohmann::json summary_of(const nlohmann::json& results, double seconds) {
  std::size_t failures = 0;
  for (const nlohmann::json& r : results) failures += r.at("pass").get<bool>() ? 0 : 1;
  return {{"cases", results.size()},
          {"failures", failures},
          {"seconds", seconds},
          {"cases_per_second", seconds > 0 ? results.size() / seconds : 0.0}};
}
}  // namespace

nlohmann::json campaign_json(const CampaignConfig& c, const CampaignBound& b) {
  std::vector<std::string> dtypes;
  for (Dtype d : c.dtypes) dtypes.emplace_back(ref::dtype_name(d));
  return {{"seed", c.seed},
          {"cases", b.cases ? nlohmann::json(*b.cases) : nlohmann::json(nullptr)},
          {"minutes", b.minutes ? nlohmann::json(*b.minutes) : nlohmann::json(nullptr)},
          {"target", b.target_error ? "error" : "failures"},
          {"subjects", c.subjects},
          {"mechanisms", c.mechanisms},
          {"dtypes", dtypes},
          {"max_shape", Shape{c.max_B, c.max_T, c.max_H, c.max_K, c.max_V}.str()}};
}

std::string campaign_case_command(const CampaignConfig& c, std::uint64_t index) {
  return "larc fuzz --seed " + std::to_string(c.seed) + " --cases " + std::to_string(index + 1) + " --shard " +
         std::to_string(index) + "/" + std::to_string(index + 1) + filters_of(c);
}

nlohmann::json campaign_report(const nlohmann::json& campaign, const Shard& shard, const CampaignRun& run,
                               const std::string& tree_hash) {
  std::vector<CaseResult> results;
  for (const FuzzCase& c : run.cases) results.push_back(c.result);
  nlohmann::json j = gate_json(results, tree_hash, shard, kFuzzPolicy);
  j["campaign"] = campaign;
  for (std::size_t k = 0; k < run.cases.size(); ++k) {
    const FuzzCase& c = run.cases[k];
    nlohmann::json& r = j["results"][k];
    r["index"] = c.index;
    if (c.shrink) {
      r["shrunk"] = result_json(c.shrink->shrunk);
      r["shrink_steps"] = c.shrink->steps;
      r["shrink_evaluations"] = c.shrink->evaluations;
    }
    if (!c.fixture.empty()) r["fixture"] = c.fixture;
  }
  j["summary"] = summary_of(j["results"], run.seconds);
  return j;
}

nlohmann::json error_search_report(const nlohmann::json& campaign, const Shard& shard, const ErrorSearch& s,
                                   double seconds, const std::string& tree_hash) {
  nlohmann::json j = gate_json(s.evaluations > 0 ? std::vector<CaseResult>{s.worst} : std::vector<CaseResult>{},
                               tree_hash, shard, kFuzzPolicy);
  j["campaign"] = campaign;
  nlohmann::json scores = nlohmann::json::array();  // what --resume replays (recorded_scores)
  for (const auto& [command, score] : s.scores)
    scores.push_back({command, std::isfinite(score) ? nlohmann::json(score) : nlohmann::json(score > 0 ? "inf" : "-inf")});
  j["search"] = {{"method", "hill-climbing over the knobs and T with random restarts"},
                 {"evaluations", s.evaluations},
                 {"restarts", s.restarts},
                 {"replayed", s.replayed},
                 {"worst_score", finite_or_null(s.worst_score)},
                 {"worst_score_text", std::isfinite(s.worst_score) ? "" : (s.worst_score > 0 ? "inf" : "-inf")},
                 {"scores", scores}};
  j["summary"] = summary_of(j["results"], seconds);
  return j;
}

std::map<std::string, double> recorded_scores(const nlohmann::json& report) {
  std::map<std::string, double> out;
  for (const nlohmann::json& entry : report.at("search").at("scores")) {
    const nlohmann::json& score = entry.at(1);
    out[entry.at(0).get<std::string>()] =
        score.is_string() ? (score.get<std::string>() == "inf" ? 1.0 : -1.0) * std::numeric_limits<double>::infinity()
                          : score.get<double>();
  }
  return out;
}

nlohmann::json continue_report(const nlohmann::json& previous, const nlohmann::json& now, const std::string& name) {
  if (!previous.is_object() || !previous.contains("campaign") || !previous.contains("results") ||
      !previous["results"].is_array() || !previous.contains("summary") || !previous["summary"].is_object())
    throw std::invalid_argument(name + ": not a larc fuzz report (it lacks \"campaign\", \"results\" or \"summary\")");
  if (const std::string d = first_difference(previous["campaign"], now["campaign"]); !d.empty())
    throw std::invalid_argument(name + ": a different campaign: " + d);
  if (previous.value("tree_hash", "") != now.value("tree_hash", ""))
    throw std::invalid_argument(name + ": made from source tree " + previous.value("tree_hash", "?") + ", this larc from " +
                                now.value("tree_hash", "?"));
  if (const std::string was = shard_of(previous, name).str(), is = shard_of(now, "this run").str(); was != is)
    throw std::invalid_argument(name + ": shard " + was + ", this run is shard " + is);
  nlohmann::json merged = now;
  merged.erase("unfinished");
  nlohmann::json results = previous["results"];
  for (const nlohmann::json& r : now["results"]) results.push_back(r);
  std::stable_sort(results.begin(), results.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("index", std::uint64_t{0}) < b.value("index", std::uint64_t{0});
  });
  merged["results"] = results;
  merged["summary"] = summary_of(results, previous["summary"].value("seconds", 0.0) + now["summary"].value("seconds", 0.0));
  return merged;
}

std::set<std::uint64_t> finished_cases(const nlohmann::json& report) {
  std::set<std::uint64_t> done;
  for (const nlohmann::json& r : report.at("results")) done.insert(r.at("index").get<std::uint64_t>());
  return done;
}

nlohmann::json merge_reports(const std::vector<nlohmann::json>& reports, const std::vector<std::string>& names) {
  if (reports.empty()) throw std::invalid_argument("merge: no shard reports given");
  if (names.size() != reports.size()) throw std::invalid_argument("merge: one name per report");
  std::map<std::uint64_t, std::string> seen;  // shard index -> file
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const nlohmann::json& r = reports[i];
    if (!r.is_object() || !r.contains("campaign") || !r.contains("results") || !r.contains("summary"))
      throw std::invalid_argument(names[i] + ": not a larc fuzz report (it lacks \"campaign\", \"results\" or \"summary\")");
    if (r.contains("unfinished"))
      throw std::invalid_argument(names[i] + ": an unfinished run (" + r["unfinished"].dump() +
                                  "): finish it with larc fuzz --resume before merging");
    const Shard s = shard_of(r, names[i]);
    if (i == 0) count = s.count;
    if (const std::string d = first_difference(reports[0]["campaign"], r["campaign"]); !d.empty())
      throw std::invalid_argument(names[i] + ": a different campaign from " + names[0] + ": " + d);
    const nlohmann::json policy = r.value("policy", nlohmann::json());
    const nlohmann::json first = reports[0].value("policy", nlohmann::json());
    if (policy != first)
      throw std::invalid_argument(names[i] + ": judged under the tolerance policy " + policy.dump() + ", " + names[0] +
                                  " under " + first.dump());
    if (r.value("tree_hash", "") != reports[0].value("tree_hash", ""))
      throw std::invalid_argument(names[i] + ": built from source tree " + r.value("tree_hash", "?") + ", " + names[0] +
                                  " from " + reports[0].value("tree_hash", "?"));
    if (s.count != count)
      throw std::invalid_argument(names[i] + ": shard " + s.str() + " of " + std::to_string(s.count) + " shards, " +
                                  names[0] + " is one of " + std::to_string(count));
    if (const auto it = seen.find(s.index); it != seen.end())
      throw std::invalid_argument("shard " + s.str() + " given twice: " + it->second + " and " + names[i]);
    seen[s.index] = names[i];
  }
  std::string missing;
  for (std::uint64_t j = 0; j < count; ++j)
    if (!seen.count(j)) missing += (missing.empty() ? "" : ", ") + Shard{j, count}.str();
  if (!missing.empty()) throw std::invalid_argument("shards missing: " + missing);

  nlohmann::json merged = reports[0];
  merged["shard"] = Shard{}.str();
  merged["merged_shards"] = count;
  double seconds = 0;
  for (const nlohmann::json& r : reports) seconds += r["summary"].value("seconds", 0.0);
  nlohmann::json results = nlohmann::json::array();
  if (reports[0]["campaign"].value("target", "") == "error") {
    // Each shard reports its worst case: the campaign's is the worst of those.
    const nlohmann::json* worst = nullptr;
    double worst_score = -kInf;
    int evaluations = 0, restarts = 0;
    for (const nlohmann::json& r : reports) {
      const nlohmann::json& s = r.at("search");
      evaluations += s.value("evaluations", 0), restarts += s.value("restarts", 0);
      const std::string text = s.value("worst_score_text", "");
      const double score = text == "inf" ? kInf : text == "-inf" ? -kInf : number_or(s, "worst_score", -kInf);
      if (!r["results"].empty() && (!worst || score > worst_score)) worst = &r, worst_score = score;
    }
    if (worst) {
      results.push_back(worst->at("results")[0]);
      merged["search"] = worst->at("search");
    }
    merged["search"]["evaluations"] = evaluations;
    merged["search"]["restarts"] = restarts;
  } else {
    for (const nlohmann::json& r : reports)
      for (const nlohmann::json& x : r["results"]) results.push_back(x);
    std::stable_sort(results.begin(), results.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
      return a.value("index", std::uint64_t{0}) < b.value("index", std::uint64_t{0});
    });
  }
  merged["results"] = results;
  merged["summary"] = summary_of(results, seconds);
  return merged;
}

CaseResult result_of_json(const nlohmann::json& j) {
  CaseResult r;
  r.spec.subject = j.at("kernel").get<std::string>();
  r.spec.mechanism = j.at("mechanism").get<std::string>();
  r.spec.dtype = parse_dtype(j.at("dtype").get<std::string>());
  r.spec.shape = Shape::parse(j.at("shape").get<std::string>());
  r.spec.seed = j.at("seed").get<std::uint64_t>();
  r.spec.knobs = j.at("knobs").get<KnobValues>();
  r.spec.origin = j.at("origin").get<std::string>();
  r.pass = j.at("pass").get<bool>();
  r.deterministic = j.at("deterministic").get<bool>();
  r.oracle_method = j.at("oracle_method").get<std::string>();
  r.errors = j.at("errors").get<std::vector<std::string>>();
  r.seconds = number_or(j, "seconds", 0);
  for (const nlohmann::json& o : j.at("outputs")) r.outputs.push_back(judgement_of(o));
  return r;
}

std::vector<CaseResult> results_of_report(const nlohmann::json& report) {
  std::vector<CaseResult> out;
  for (const nlohmann::json& r : report.at("results"))
    out.push_back(result_of_json(r.contains("shrunk") ? r["shrunk"] : r));  // a failure as its shrunk case
  return out;
}

std::string save_to_corpus(const std::filesystem::path& corpus, const FuzzCase& failure, const std::string& found_by) {
  const CaseResult& s = failure.shrink ? failure.shrink->shrunk : failure.result;
  PreparedCase p = prepare_case(s.spec);
  p.spec.origin = "fuzz";
  std::filesystem::create_directories(corpus);
  const std::filesystem::path path = corpus / fixture_name(s.spec);
  write_fixture(path, p,
                {{"subject", s.spec.subject},
                 {"failure", joined(s.errors, 8)},
                 {"reproduce", "larc gate --fixtures " + path.string() + " --no-grid --random 0 --subject " +
                                   s.spec.subject + " --mechanism " + s.spec.mechanism},
                 {"case_reproduce", s.spec.reproduce()},
                 {"found_by", found_by}});
  return path.string();
}

}  // namespace larc::harness
