// The gate's reports (docs/gate.md, "Reports"): JSON, JUnit XML, Markdown and the terminal table.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "larc/harness/gate.h"

namespace larc::harness::detail {
extern const char* const kBuildTreeHash;  // generated: harness/CMakeLists.txt, larc_tree_hash
}  // namespace larc::harness::detail

namespace larc::harness {

namespace {
std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// JSON has no inf: an unbounded margin (an exact oracle) is written as null.
nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json grades_json(const Judgement& j) {
  nlohmann::json g = nlohmann::json::object();
  for (const auto& [name, f] : j.grades)
    g[name] = {{"pass", f.pass}, {"worst_ratio", f.worst_ratio}, {"baseline_rel_err", f.baseline_rel_err}};
  return g;
}

nlohmann::json judgement_json(const Judgement& j) {
  nlohmann::json out = {{"output", j.output},
          {"grade_declared", j.grade_declared},
          {"grade_met", j.grade_met},
          {"grades", grades_json(j)},
          {"dtype", std::string(ref::dtype_name(j.dtype))},
          {"pass", j.pass},
          {"max_rel_err", j.max_rel_err},
          {"baseline_rel_err", j.baseline_rel_err},
          {"rel_rms", j.rel_rms},
          {"baseline_rel_rms", j.baseline_rel_rms},
          {"max_abs_err", j.max_abs_err},
          {"baseline_max_abs_err", j.baseline_max_abs_err},
          {"worst_ratio", j.worst_ratio},
          {"worst_timestep", j.worst_timestep},
          {"worst_coordinate", j.worst_coordinate},
          {"max_ulps", j.max_ulps},
          {"cosine", j.cosine},
          {"whole_tensor_ratio", j.whole_tensor_ratio},
          {"unwritten", j.unwritten},
          {"non_finite", j.non_finite},
          {"baseline_non_finite", j.baseline_non_finite},
          {"timestep_violations", j.timestep_violations},
          {"window_violations", j.window_violations},
          {"oracle_margin", finite_or_null(j.oracle_margin)},
          {"oracle_certified", j.oracle_certified}};
  if (!j.baseline_errors.empty()) out["baseline_errors"] = j.baseline_errors;
  if (j.profile_ratio >= 0) {
    out["profile_ratio"] = j.profile_ratio;
    out["profile_growth"] = j.profile_growth;
  }
  return out;
}

double worst_ratio(const CaseResult& r) {
  double w = 0;
  for (const Judgement& j : r.outputs) w = std::max(w, j.worst_ratio);
  return w;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\n': o += "&#10;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// "[io]" when some output is judged at a grade other than fp32, "" otherwise (JUnit class names).
std::string declared_suffix(const CaseResult& r) {
  std::string g;
  for (const Judgement& o : r.outputs)
    if (o.grade_declared != "fp32" && g.find(o.grade_declared) == std::string::npos) g += (g.empty() ? "" : ",") + o.grade_declared;
  return g.empty() ? "" : "[" + g + "]";
}

// Per output "name: met/declared", e.g. "o: fp32/fp32, final_state: io/io".
std::string grade_cell(const CaseResult& r) {
  std::string c;
  for (const Judgement& o : r.outputs) c += (c.empty() ? "" : ", ") + o.output + ": " + o.grade_met + "/" + o.grade_declared;
  return c.empty() ? "-" : c;
}

std::string case_name(const CaseResult& r) {
  std::string origin = r.spec.origin == "grid" || r.spec.origin == "random" ? r.spec.origin : "fixture " + r.spec.origin;
  return std::string(ref::dtype_name(r.spec.dtype)) + " [" + r.spec.shape.str() + "] seed " + std::to_string(r.spec.seed) +
         " (" + origin + ")";
}
std::size_t skipped_count(const std::vector<CaseResult>& results) {
  std::size_t n = 0;
  for (const CaseResult& r : results) n += r.skipped.empty() ? 0 : 1;
  return n;
}

// ", 3 skipped (outside their dtype's range)", or nothing.
std::string skipped_note(const std::vector<CaseResult>& results) {
  const std::size_t n = skipped_count(results);
  return n ? ", " + std::to_string(n) + " skipped (outside their dtype's range)" : "";
}

std::string verdict_of(const CaseResult& r) { return !r.skipped.empty() ? "skipped" : r.pass ? "pass" : "fail"; }
}  // namespace

nlohmann::json result_json(const CaseResult& r) {
  nlohmann::json j = {{"kernel", r.spec.subject},
                      {"mechanism", r.spec.mechanism},
                      {"dtype", std::string(ref::dtype_name(r.spec.dtype))},
                      {"shape", r.spec.shape.str()},
                      {"seed", r.spec.seed},
                      {"knobs", r.spec.knobs},
                      {"origin", r.spec.origin},
                      {"pass", r.pass},
                      {"deterministic", r.deterministic},
                      {"oracle_method", r.oracle_method},
                      {"errors", r.errors},
                      {"reproduce", r.spec.reproduce()},
                      {"seconds", r.seconds},
                      {"worst_ratio", worst_ratio(r)}};
  if (!r.skipped.empty()) j["skipped"] = r.skipped;
  if (const Judgement* o = r.main_output()) {
    for (const char* key : {"grade_declared", "grade_met", "max_rel_err", "baseline_rel_err", "rel_rms", "baseline_rel_rms", "max_abs_err",
                            "worst_timestep", "worst_coordinate", "max_ulps", "cosine", "oracle_margin"})
      j[key] = judgement_json(*o)[key];
  }
  nlohmann::json outs = nlohmann::json::array();
  for (const Judgement& o : r.outputs) outs.push_back(judgement_json(o));
  j["outputs"] = outs;
  return j;
}

nlohmann::json tolerance_policy_json(const ToleranceConfig& policy) {
  return {{"k", policy.k},
          {"k_gradient", policy.k_gradient},
          {"window", policy.window},
          {"oracle_margin", policy.oracle_margin},
          {"rounding_draws", policy.rounding_draws}};
}

nlohmann::json gate_json(const std::vector<CaseResult>& results, const std::string& tree_hash, const Shard& shard,
                         const ToleranceConfig& policy) {
  nlohmann::json rs = nlohmann::json::array();
  for (const CaseResult& r : results) rs.push_back(result_json(r));
  return {{"tree_hash", tree_hash}, {"shard", shard.str()}, {"policy", tolerance_policy_json(policy)}, {"results", rs}};
}

std::string gate_junit(const std::vector<CaseResult>& results, const std::string& suite_name) {
  std::size_t failures = 0;
  double seconds = 0;
  for (const CaseResult& r : results) failures += r.pass ? 0 : 1, seconds += r.seconds;
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" << results.size() << "\" failures=\""
    << failures << "\" time=\"" << seconds << "\">\n  <testsuite name=\"" << xml_escape(suite_name) << "\" tests=\""
    << results.size() << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"" << skipped_count(results)
    << "\" time=\"" << seconds << "\">\n";
  for (const CaseResult& r : results) {
    x << "    <testcase classname=\"" << xml_escape("gate." + r.spec.mechanism + "." + r.spec.subject + declared_suffix(r))
      << "\" name=\""
      << xml_escape(case_name(r)) << "\" time=\"" << r.seconds << "\">\n      <properties>\n";
    auto prop = [&](const std::string& k, const std::string& v) {
      x << "        <property name=\"" << k << "\" value=\"" << xml_escape(v) << "\"/>\n";
    };
    prop("seed", std::to_string(r.spec.seed));
    prop("reproduce", r.spec.reproduce());
    prop("verdict", verdict_of(r));
    prop("errors", joined(r.errors, "\n"));
    if (const Judgement* o = r.main_output()) {
      prop("max_rel_err", sci(o->max_rel_err));
      prop("baseline_rel_err", sci(o->baseline_rel_err));
      prop("worst_timestep", std::to_string(o->worst_timestep));
    }
    prop("worst_ratio", sci(worst_ratio(r)));
    for (const Judgement& o : r.outputs) {
      prop("grade." + o.output, o.grade_met + " / " + o.grade_declared);
      for (const auto& [grade, g] : o.grades) prop("worst_ratio." + o.output + "." + grade, sci(g.worst_ratio));
    }
    prop("oracle_method", r.oracle_method);
    x << "      </properties>\n";
    if (!r.skipped.empty()) x << "      <skipped message=\"" << xml_escape(r.skipped) << "\"/>\n";
    if (!r.pass)
      x << "      <failure message=\"" << xml_escape(r.errors.empty() ? "failed" : r.errors.front()) << "\">"
        << xml_escape(joined(r.errors, "\n") + "\nreproduce: " + r.spec.reproduce()) << "</failure>\n";
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

std::string gate_markdown(const std::vector<CaseResult>& results, const std::string& tree_hash) {
  std::size_t failures = 0;
  for (const CaseResult& r : results) failures += r.pass ? 0 : 1;
  std::ostringstream m;
  m << "# larc gate\n\nSource tree (reference/ + gpu/): `" << tree_hash << "`. " << results.size() << " cases, "
    << failures << " failed" << skipped_note(results) << ". Tolerance: per timestep and per trailing window of 64, error ≤ 2 × the same-precision "
    << "baseline's (3 × for gradients; GDN's and KLA's gradient baselines also under rounding draws of their derived gates) "
    << "+ the dtype's rounding of the oracle (docs/gate.md).\n\n"
    << "The grade column gives, per output, the strictest precision grade met / the grade declared.\n\n"
    << "| kernel | mechanism | dtype | shape | seed | origin | verdict | grade met / declared | max rel err | baseline rel err | worst t | error/tolerance |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const CaseResult& r : results) {
    const Judgement* o = r.main_output();
    m << "| " << r.spec.subject << " | " << r.spec.mechanism << " | " << ref::dtype_name(r.spec.dtype) << " | "
      << r.spec.shape.str() << " | " << r.spec.seed << " | " << r.spec.origin << " | " << (r.pass ? verdict_of(r) : "**FAIL**")
      << " | " << grade_cell(r) << " | " << (o ? sci(o->max_rel_err) : "-") << " | " << (o ? sci(o->baseline_rel_err) : "-") << " | "
      << (o ? std::to_string(o->worst_timestep) : "-") << " | " << sci(worst_ratio(r)) << " |\n";
  }
  if (failures) {
    m << "\n## Failures\n";
    for (const CaseResult& r : results) {
      if (r.pass) continue;
      m << "\n### " << r.spec.subject << " / " << r.spec.mechanism << " / " << case_name(r) << "\n\n```\n"
        << r.spec.reproduce() << "\n```\n\n";
      for (const std::string& e : r.errors) m << "- " << e << "\n";
    }
  }
  return m.str();
}

std::string gate_table(const std::vector<CaseResult>& results) {
  struct Row {
    std::size_t cases = 0, failed = 0;
    double worst = 0, max_rel = 0, base_rel = 0;
  };
  std::map<std::string, Row> rows;
  for (const CaseResult& r : results) {
    Row& row = rows[r.spec.subject + "  " + r.spec.mechanism + "  " + std::string(ref::dtype_name(r.spec.dtype))];
    ++row.cases;
    row.failed += r.pass ? 0 : 1;
    row.worst = std::max(row.worst, worst_ratio(r));
    if (const Judgement* o = r.main_output()) {
      row.max_rel = std::max(row.max_rel, o->max_rel_err);
      row.base_rel = std::max(row.base_rel, o->baseline_rel_err);
    }
  }
  std::ostringstream t;
  char line[256];
  std::snprintf(line, sizeof line, "%-38s %6s %6s %12s %12s %12s\n", "kernel  mechanism  dtype", "cases", "failed",
                "error/tol", "max_rel_err", "baseline");
  t << line;
  for (const auto& [key, row] : rows) {
    std::snprintf(line, sizeof line, "%-38s %6zu %6zu %12.3g %12.3g %12.3g\n", key.c_str(), row.cases, row.failed,
                  row.worst, row.max_rel, row.base_rel);
    t << line;
  }
  std::size_t failed = 0;
  for (const CaseResult& r : results) {
    if (r.pass) continue;
    ++failed;
    t << "\nFAIL " << r.spec.subject << " / " << r.spec.mechanism << " / " << case_name(r) << "\n";
    for (const std::string& e : r.errors) t << "  " << e << "\n";
    t << "  reproduce: " << r.spec.reproduce() << "\n";
  }
  for (const CaseResult& r : results)
    if (!r.skipped.empty()) t << "\nSKIPPED " << r.spec.subject << " / " << r.spec.mechanism << " / " << case_name(r) << ": " << r.skipped << "\n";
  t << "\n" << results.size() << " cases, " << failed << " failed" << skipped_note(results) << "\n";
  return t.str();
}

std::string source_tree_hash() {
  // A binary built here and run on another host (the H200) may be given the hash of the tree it was
  // built from by its run script; otherwise the one fixed at build time (cmake/larc_tree_hash.cmake).
  if (const char* given = std::getenv("LARC_TREE_HASH"); given != nullptr && *given != '\0') return given;
  return detail::kBuildTreeHash;
}

ReportFreshness report_freshness(const nlohmann::json& report, const std::string& source_hash) {
  if (!report.is_object() || !report.contains("tree_hash") || !report["tree_hash"].is_string())
    return {false, "the report has no tree_hash: it cannot be tied to a source tree"};
  const std::string made_from = report["tree_hash"].get<std::string>();
  if (made_from == "unknown" || made_from.ends_with("-dirty"))
    return {false, "the report was made from an unidentified or uncommitted tree (" + made_from + ")"};
  if (source_hash == "unknown") return {false, "the source tree here is not a git checkout; cannot compare"};
  if (source_hash.ends_with("-dirty"))
    return {false, "the source (reference/ + gpu/) has uncommitted changes; the report (" + made_from +
                       ") describes the committed tree at best"};
  if (made_from != source_hash)
    return {false, "stale: made from " + made_from + ", the source (reference/ + gpu/) is now " + source_hash};
  return {true, "current: made from " + made_from + ", the source tree of reference/ + gpu/"};
}

}  // namespace larc::harness
