// `larc fuzz`: a deterministic random campaign over the registered subjects (harness/fuzz.h), failures
// shrunk and saved as fixtures into a corpus, or with `--target error` a hill-climbing search for the
// inputs that bring a subject closest to its tolerance (docs/fuzzing.md). Exit 0 no failure, 1
// failures found (saved), 2 a usage or input error, 128 + N interrupted by signal N (SIGINT, SIGTERM)
// after writing every finished case; `--resume` continues such a run (docs/robustness.md).
#include "fuzz_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "larc/harness/fuzz_report.h"
#include "larc/harness/gate.h"
#include "larc/harness/progress.h"
#include "knob_option.h"
#include "option_checks.h"
#include "output_files.h"
#include "stop_signal.h"

namespace larc::cli {

namespace {
namespace h = larc::harness;
using Clock = std::chrono::steady_clock;

struct FuzzCli {
  std::optional<double> minutes;
  std::optional<std::uint64_t> cases;
  std::uint64_t seed = 1;
  std::string shard, corpus = "fuzz-corpus", json_path, junit_path, markdown_path, target, max_shape = "2,256,2,64,64";
  std::optional<std::uint64_t> shard_count;
  std::vector<std::string> subjects, mechanisms, dtypes, knobs;
  bool progress = false, resume = false;
};

// Every kCheckpointSeconds a run with --json rewrites its report, marked unfinished, so that a run
// killed without warning (SIGKILL, a lost node) loses at most that much work to --resume.
class Checkpoints {
 public:
  static constexpr double kCheckpointSeconds = 60;
  explicit Checkpoints(std::string path) : path_(std::move(path)) {}
  // Whether a checkpoint is due (never without --json).
  bool due() const {
    return !path_.empty() && std::chrono::duration<double>(Clock::now() - last_).count() >= kCheckpointSeconds;
  }
  void write(nlohmann::json report) {
    report["unfinished"] = "checkpoint (the run was still going)";
    write_text_file(path_, report.dump(2) + "\n");
    last_ = Clock::now();
  }

 private:
  std::string path_;
  Clock::time_point last_ = Clock::now();
};

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// Cases of the first `n` that shard j of `count` runs.
std::size_t shard_cases(std::uint64_t n, const h::Shard& s) { return n > s.index ? (n - s.index + s.count - 1) / s.count : 0; }

void write_reports(const FuzzCli& c, const nlohmann::json& report) {
  if (!c.json_path.empty()) write_text_file(c.json_path, report.dump(2) + "\n");
  const std::vector<h::CaseResult> results = h::results_of_report(report);
  if (!c.junit_path.empty()) write_text_file(c.junit_path, h::gate_junit(results, "larc fuzz"));
  if (!c.markdown_path.empty()) write_text_file(c.markdown_path, h::gate_markdown(results, report.value("tree_hash", "")));
}

// The worst case's figures, output by output.
void print_worst(const h::ErrorSearch& s) {
  const h::CaseResult& w = s.worst;
  std::cout << "worst case after " << s.evaluations << " evaluations (" << s.restarts << " climbs): " << w.spec.subject
            << " / " << w.spec.mechanism << " / " << larc::ref::dtype_name(w.spec.dtype) << " [" << w.spec.shape.str()
            << "], error/tolerance " << sci(s.worst_score) << (w.pass ? " (passes)" : " (FAILS)") << "\n";
  for (const h::Judgement& j : w.outputs)
    std::cout << "  " << j.output << ": worst_ratio " << sci(j.worst_ratio) << ", max_rel_err " << sci(j.max_rel_err)
              << ", baseline_rel_err " << sci(j.baseline_rel_err) << ", worst timestep " << j.worst_timestep << "\n";
  std::cout << "  knobs:";
  for (const auto& [k, v] : w.spec.knobs) std::cout << " " << k << "=" << sci(v);
  std::cout << "\n  reproduce: " << w.spec.reproduce() << "\n";
  for (const std::string& e : w.errors) std::cout << "  " << e << "\n";
}

// The report `--resume` continues, or nullopt when `path` does not exist yet (the campaign starts).
std::optional<nlohmann::json> previous_report(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::invalid_argument("--resume: " + path + ": cannot read");
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number past double's
    throw std::invalid_argument("--resume: " + path + ": not JSON (" + e.what() + ")");
  }
}

int run_fuzz(const FuzzCli& c) {
  if (c.minutes.has_value() == c.cases.has_value()) {
    std::cerr << "larc fuzz: give exactly one of --minutes M or --cases N\n";
    return 2;
  }
  if (c.resume && c.json_path.empty()) {
    std::cerr << "larc fuzz: --resume: give --json FILE, the report of the run to continue\n";
    return 2;
  }
  h::CampaignConfig cfg;
  cfg.seed = c.seed;
  cfg.subjects = c.subjects;
  cfg.mechanisms = c.mechanisms;
  for (const std::string& d : c.dtypes) cfg.dtypes.push_back(h::parse_dtype(d));
  cfg.knobs = parse_knobs(c.knobs);
  const h::Shape max = h::Shape::parse(c.max_shape);
  cfg.max_B = max.B, cfg.max_T = max.T, cfg.max_H = max.H, cfg.max_K = max.K, cfg.max_V = max.V;
  const h::Campaign campaign(cfg);  // unknown names throw std::invalid_argument: exit 2
  const h::ResolvedShard shard = h::resolve_shard(c.shard, c.shard_count);
  if (!can_write("fuzz", "--json", c.json_path) || !can_write("fuzz", "--junit", c.junit_path) ||
      !can_write("fuzz", "--markdown", c.markdown_path))
    return 2;
  const h::CampaignBound bound{c.cases, c.minutes, c.target == "error"};
  const nlohmann::json identity = h::campaign_json(cfg, bound);
  const std::string tree = h::source_tree_hash();
  // A resumed run's report joins the previous one's results (continue_report checks it is this campaign).
  const std::optional<nlohmann::json> previous = c.resume ? previous_report(c.json_path) : std::nullopt;
  const auto report_of = [&](const h::CampaignRun& run) {
    const nlohmann::json now = h::campaign_report(identity, shard.shard, run, tree);
    return previous ? h::continue_report(*previous, now, c.json_path) : now;
  };
  h::RunLimits limits;
  h::SearchLimits search_limits;
  double seconds_before = 0;
  if (previous) {
    try {
      if (bound.target_error) {
        h::continue_report(*previous, h::error_search_report(identity, shard.shard, {}, 0, tree), c.json_path);
        search_limits.recorded = h::recorded_scores(*previous);
      } else {
        report_of({});
        limits.skip = h::finished_cases(*previous);
      }
      seconds_before = (*previous)["summary"].value("seconds", 0.0);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument("--resume: " + c.json_path + ": not a larc fuzz report (" + e.what() + ")");
    }
    if (bound.target_error)
      std::cout << "resuming " << c.json_path << ": " << search_limits.recorded.size() << " evaluations recorded\n";
    else
      std::cout << "resuming " << c.json_path << ": " << limits.skip.size() << " cases finished\n";
  }
  std::optional<Clock::time_point> deadline;
  if (c.minutes)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(std::max(0.0, *c.minutes * 60 - seconds_before)));
  const std::size_t total = c.cases ? shard_cases(*c.cases, shard.shard) : 0;
  h::Progress progress(bound.target_error ? "larc fuzz --target error" : "larc fuzz", total, c.progress,
                       c.minutes ? *c.minutes * 60 : 0);
  const StopOnSignal signals;
  const h::StopRequest stop = [] { return StopOnSignal::received() != 0; };
  const std::string stopped_by = "interrupted by ";
  std::size_t failed = 0;
  if (previous)
    for (const nlohmann::json& r : (*previous)["results"]) failed += r.value("pass", true) ? 0 : 1;
  if (shard.source != "none") std::cout << "shard " << shard.shard.str() << " (from " << shard.source << ")\n";

  if (bound.target_error) {
    const h::CaseObserver observe = [&](std::size_t done, const h::FuzzCase& fc) {
      failed += fc.result.pass ? 0 : 1;
      progress.update(done, failed);
    };
    search_limits.evaluations = c.cases ? static_cast<int>(std::min<std::uint64_t>(total, std::numeric_limits<int>::max()))
                                        : std::numeric_limits<int>::max();
    search_limits.deadline = deadline;
    search_limits.stop = stop;
    const auto start = Clock::now();
    // A search's checkpoint holds every evaluation's score: --resume retraces the search from them.
    Checkpoints checkpoints(c.json_path);
    search_limits.after_each = [&](const h::ErrorSearch& so_far) {
      if (!checkpoints.due()) return;
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      checkpoints.write(h::error_search_report(identity, shard.shard, so_far, seconds_before + elapsed, tree));
    };
    const h::ErrorSearch s = h::hill_climb_error(campaign, shard.shard, search_limits, {}, observe);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (s.replayed > 0) std::cout << s.replayed << " evaluations retraced from " << c.json_path << "\n";
    nlohmann::json report = h::error_search_report(identity, shard.shard, s, seconds_before + seconds, tree);
    if (const int sig = StopOnSignal::received()) report["unfinished"] = stopped_by + StopOnSignal::name(sig);
    if (s.evaluations == 0) {
      std::cout << "no case evaluated (the shard holds none within the bound)\n";
      write_reports(c, report);
      return StopOnSignal::received() ? 128 + StopOnSignal::received() : 0;
    }
    print_worst(s);
    std::cout << s.evaluations << " evaluations in " << sci(seconds) << " s (" << sci((s.evaluations - s.replayed) / seconds)
              << " cases/s)\n";
    if (!s.worst.pass) {
      h::FuzzCase fc;
      fc.result = s.worst;
      fc.fixture = h::save_to_corpus(c.corpus, fc, "larc fuzz --target error" + std::string(c.cases ? " --cases " + std::to_string(*c.cases) : "") +
                                                       " --seed " + std::to_string(c.seed));
      report["results"][0]["fixture"] = fc.fixture;
      std::cout << "  saved to " << fc.fixture << "\n";
    }
    write_reports(c, report);
    if (const int sig = StopOnSignal::received()) {
      std::cout << "search " << stopped_by << StopOnSignal::name(sig) << "\n";
      return 128 + sig;
    }
    return s.worst.pass ? 0 : 1;
  }

  h::CampaignRun so_far;
  Checkpoints checkpoints(c.json_path);
  const auto run_start = Clock::now();
  const h::CaseObserver observe = [&](std::size_t done, const h::FuzzCase& fc) {
    failed += fc.result.pass ? 0 : 1;
    progress.update(limits.skip.size() + done, failed);
    if (c.json_path.empty()) return;
    so_far.cases.push_back(fc);
    if (!checkpoints.due()) return;
    so_far.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
    checkpoints.write(report_of(so_far));
  };
  limits.cases = c.cases;
  limits.deadline = deadline;
  limits.stop = stop;
  const h::FailureSaver save = [&](const h::FuzzCase& f) {
    return h::save_to_corpus(c.corpus, f, h::campaign_case_command(cfg, f.index));
  };
  const h::CampaignRun run = h::run_campaign(campaign, shard.shard, limits, save, observe);
  nlohmann::json report = report_of(run);
  if (run.interrupted) report["unfinished"] = stopped_by + StopOnSignal::name(StopOnSignal::received());
  std::cout << h::gate_table(h::results_of_report(report));
  for (const h::FuzzCase& f : run.cases) {
    if (f.result.pass) continue;
    std::cout << "case " << f.index << ": shrunk [" << f.result.spec.shape.str() << "] -> ["
              << f.shrink->shrunk.spec.shape.str() << "] in " << f.shrink->steps << " steps; saved to " << f.fixture
              << "\n  found by: " << h::campaign_case_command(cfg, f.index) << "\n";
  }
  const auto& summary = report["summary"];
  const std::size_t failures = summary["failures"].get<std::size_t>();
  std::cout << "campaign seed " << c.seed << ", shard " << shard.shard.str() << ": " << summary["cases"] << " cases in "
            << sci(summary["seconds"].get<double>()) << " s (" << sci(summary["cases_per_second"].get<double>())
            << " cases/s), " << failures << " failed";
  if (previous) std::cout << " (" << limits.skip.size() << " of them resumed from " << c.json_path << ")";
  std::cout << "\n";
  write_reports(c, report);
  if (run.interrupted) {
    const int sig = StopOnSignal::received();
    std::cout << "campaign " << stopped_by << StopOnSignal::name(sig) << " after case " << 
        (run.cases.empty() ? std::string("none") : std::to_string(run.cases.back().index))
              << (c.json_path.empty() ? std::string("; without --json it cannot be resumed")
                                      : "; every finished case is in " + c.json_path + ", continue with --resume")
              << "\n";
    return 128 + sig;
  }
  return failures ? 1 : 0;
}
}  // namespace

std::function<int()> add_fuzz_command(CLI::App& app) {
  auto c = std::make_shared<FuzzCli>();
  CLI::App* cmd = app.add_subcommand("fuzz", "Random campaign over the registered kernels; failures shrunk and saved as fixtures");
  auto* minutes = cmd->add_option("--minutes", c->minutes, "Run for this many minutes")->check(minutes_value());
  cmd->add_option("--cases", c->cases, "Run campaign cases 0..N-1 (those of this shard)")
      ->check(whole_number(1))
      ->excludes(minutes);
  cmd->add_option("--seed", c->seed, "Campaign seed: case i depends only on (seed, i) and the filters")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--shard", c->shard, "Run shard j of n (cases i = j mod n); else from GTEST_SHARD_INDEX, SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX");
  cmd->add_option("--shard-count", c->shard_count, "Shard count for JOB_COMPLETION_INDEX (else LARC_SHARD_COUNT)")
      ->check(whole_number(1));
  cmd->add_option("--subject", c->subjects, "Only these subjects (kernel names); repeatable");
  cmd->add_option("--mechanism", c->mechanisms, "Only these mechanisms; repeatable");
  cmd->add_option("--dtype", c->dtypes, "Only these dtypes (bf16, fp16, fp32); repeatable");
  cmd->add_option("--knob", c->knobs, "Hold a generator knob at NAME=VALUE in every case (the rest are drawn); repeatable");
  cmd->add_option("--max-shape", c->max_shape, "Largest B,T,H,K,V drawn")->capture_default_str();
  cmd->add_option("--corpus", c->corpus, "Folder the shrunk failures are saved to as fixtures")->capture_default_str();
  cmd->add_option("--json", c->json_path, "Write the shard's results as JSON (input of larc merge)");
  cmd->add_option("--junit", c->junit_path, "Write the results as JUnit XML (failures as their shrunk cases)");
  cmd->add_option("--markdown", c->markdown_path, "Write a Markdown summary");
  cmd->add_option("--target", c->target, "error: hill-climb toward the largest error/tolerance instead of sampling")
      ->check(CLI::IsMember({"error"}));
  cmd->add_flag("--progress", c->progress, "Show progress on stderr even when it is not a terminal");
  cmd->add_flag("--resume", c->resume,
                "Continue the campaign whose (unfinished) report is the --json file: skip its finished cases and "
                "write the report of the whole campaign (starts it when the file does not exist)");
  return [cmd, c]() -> int { return cmd->parsed() ? run_fuzz(*c) : -1; };
}

}  // namespace larc::cli
