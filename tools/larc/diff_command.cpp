// `larc diff FIXTURE CANDIDATE`: judges an external kernel's outputs (a safetensors file with "o" and
// optionally "final_state", any float dtype) against the fixture's oracle with the gate's tolerance
// policy; the same-precision baseline is computed from the fixture's inputs and dtype. Exit 0 pass,
// 1 violation, 2 usage or input error (a bad file names itself and the problem).
#include "diff_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "larc/fixtures/safetensors.h"
#include "larc/harness/fixture.h"
#include "larc/harness/gate.h"
#include "larc/harness/grade_options.h"
#include "larc/harness/profile.h"
#include "output_files.h"

namespace larc::cli {

namespace {
namespace h = larc::harness;

struct DiffCli {
  std::string fixture, candidate, kernel, prefix, json_path;
  std::string grade = "fp32";
  std::vector<std::string> grade_of;  // OUTPUT=GRADE
  std::int64_t grade_chunk = 64;
  std::string record_profile, against;
  double k_reg = h::kRegressionFactor;
};

int run_diff(const DiffCli& c) {
  if (!can_write("diff", "--json", c.json_path) || !can_write("diff", "--record-profile", c.record_profile)) return 2;
  h::PreparedCase prepared;
  h::TensorMap candidate;
  try {
    prepared = h::read_fixture(c.fixture);
    for (auto& [name, t] : h::read_candidate(c.candidate))
      if (name.rfind(c.prefix, 0) == 0) candidate.emplace(name.substr(c.prefix.size()), std::move(t));
  } catch (const larc::fixtures::FixtureError& e) {
    std::cerr << "larc diff: " << e.what() << "\n";
    return 2;
  }
  h::GradeDeclaration grades;
  try {
    grades = h::parse_grade_declaration(c.grade, c.grade_of, c.grade_chunk);
  } catch (const std::invalid_argument& e) {
    std::cerr << "larc diff: " << e.what() << "\n";
    return 2;
  }
  try {
    grades.validate(h::find_mechanism(prepared.spec.mechanism));
  } catch (const std::invalid_argument& e) {
    std::cerr << "larc diff: --grade/--grade-of/--grade-chunk: " << e.what() << "\n";
    return 2;
  }
  h::CaseResult r;
  try {
    r = h::judge_candidate(prepared, candidate, grades);
  } catch (const std::invalid_argument& e) {
    std::cerr << "larc diff: " << c.candidate << ": " << e.what() << "\n";
    return 2;
  }
  r.spec.subject = c.kernel.empty() ? std::filesystem::path(c.candidate).stem().string() : c.kernel;
  if (!c.against.empty()) {
    try {
      h::Profile::read(c.against).check(r, {.k_reg = c.k_reg});
    } catch (const std::invalid_argument& e) {
      std::cerr << "larc diff: --against: " << e.what() << "\n";
      return 2;
    }
  }
  std::cout << "fixture " << c.fixture << ": " << r.spec.mechanism << " " << larc::ref::dtype_name(r.spec.dtype) << " ["
            << r.spec.shape.str() << "] seed " << r.spec.seed << "\ncandidate " << c.candidate << "\n";
  for (const h::Judgement& j : r.outputs) {
    std::cout << "  " << j.output << ": " << (j.pass ? "pass" : "FAIL") << " at " << j.grade_declared << " (grade met: "
              << j.grade_met << ")  max_rel_err " << j.max_rel_err << " (baseline " << j.baseline_rel_err << ")  rel_rms "
              << j.rel_rms << " (baseline " << j.baseline_rel_rms << ")  error/tolerance " << j.worst_ratio << " at t="
              << j.worst_timestep << "  max " << j.max_ulps << " ulps  cosine " << j.cosine << "\n";
    if (j.profile_ratio >= 0)
      std::cout << "    against the profile: error/regression tolerance " << j.profile_ratio << ", error grew up to "
                << j.profile_growth << "x the recorded one\n";
    for (const auto& [grade, g] : j.grades)
      std::cout << "    at " << grade << ": " << (g.pass ? "pass" : "fail") << ", error/tolerance " << g.worst_ratio
                << ", baseline max_rel_err " << g.baseline_rel_err << "\n";
  }
  for (const std::string& e : r.errors) std::cout << "  " << e << "\n";
  std::cout << (!r.skipped.empty() ? "SKIPPED: " + r.skipped : r.pass ? "PASS" : "FAIL") << "\n";
  if (!c.json_path.empty()) {
    nlohmann::json j = h::result_json(r);
    j["fixture"] = c.fixture;
    j["candidate"] = c.candidate;
    j.erase("reproduce");
    j["reproduce"] = "larc diff " + c.fixture + " " + c.candidate;
    write_text_file(c.json_path, nlohmann::json{{"tree_hash", h::source_tree_hash()}, {"results", {j}}}.dump(2) + "\n");
  }
  if (!c.record_profile.empty())
    write_text_file(c.record_profile, h::record_profile({r}, h::source_tree_hash()).dump() + "\n");
  return r.pass ? 0 : 1;
}
}  // namespace

std::function<int()> add_diff_command(CLI::App& app) {
  auto c = std::make_shared<DiffCli>();
  CLI::App* cmd = app.add_subcommand("diff", "Judge an external kernel's outputs against a fixture's oracle");
  cmd->add_option("FIXTURE", c->fixture, "A larc fixture (larc fixtures gen)")->required();
  cmd->add_option("CANDIDATE", c->candidate, "safetensors file with the kernel's \"o\" (and optionally \"final_state\")")->required();
  cmd->add_option("--kernel", c->kernel, "Name of the kernel in the report (default: the candidate file's name)");
  cmd->add_option("--prefix", c->prefix, "Read output NAME from the candidate's tensor PREFIX+NAME (e.g. oracle.)");
  cmd->add_option("--json", c->json_path, "Write the result as JSON (the gate's schema)");
  cmd->add_option("--grade", c->grade, "The precision grade the outputs are judged at: fp32 (default), io, io:tf32, io:tf32-truncated (docs/gate.md)");
  cmd->add_option("--grade-of", c->grade_of, "OUTPUT=GRADE: one output's grade (e.g. final_state=io); repeatable");
  cmd->add_option("--record-profile", c->record_profile,
                  "Write an accuracy-regression profile of this candidate's per-timestep errors (docs/gate.md)");
  cmd->add_option("--against", c->against, "Fail where the error grows past k_reg × the profile's recorded error");
  cmd->add_option("--k-reg", c->k_reg, "The growth factor --against allows (default: the calibrated one)")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--grade-chunk", c->grade_chunk, "The chunk size of the kernel's arithmetic: the io baseline's (default 64)");
  return [cmd, c]() -> int { return cmd->parsed() ? run_diff(*c) : -1; };
}

}  // namespace larc::cli
