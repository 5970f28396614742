// `larc merge SHARD.json... --json OUT [--markdown OUT] [--junit OUT]`: joins the reports of every
// shard of one `larc fuzz` campaign into the report of one unsharded run (harness/fuzz_report.h).
// Exit 0 merged without failures, 1 merged with failures, 2 a usage error: an unreadable file, shards
// of different campaigns (seed, bound, filters, tree hash, tolerance policy, shard count), a shard given twice or
// missing, each named.
#include "merge_command.h"

#include <fstream>
#include <iostream>
#include <memory>

#include "larc/harness/fuzz_report.h"
#include "larc/harness/gate.h"
#include "output_files.h"

namespace larc::cli {

namespace {
namespace h = larc::harness;

struct MergeCli {
  std::vector<std::string> shards;
  std::string json_path, junit_path, markdown_path;
};

int run_merge(const MergeCli& c) {
  if (!can_write("merge", "--json", c.json_path) || !can_write("merge", "--junit", c.junit_path) ||
      !can_write("merge", "--markdown", c.markdown_path))
    return 2;
  std::vector<nlohmann::json> reports;
  for (const std::string& path : c.shards) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      std::cerr << "larc merge: " << path << ": cannot read\n";
      return 2;
    }
    try {
      reports.push_back(nlohmann::json::parse(f));
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number past double's
      std::cerr << "larc merge: " << path << ": not JSON (" << e.what() << ")\n";
      return 2;
    }
  }
  nlohmann::json merged;
  std::vector<h::CaseResult> results;
  try {
    merged = h::merge_reports(reports, c.shards);
    results = h::results_of_report(merged);
  } catch (const std::invalid_argument& e) {
    std::cerr << "larc merge: " << e.what() << "\n";
    return 2;
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "larc merge: a result lacks a field of the report schema (" << e.what() << ")\n";
    return 2;
  }
  std::cout << h::gate_table(results);
  const auto& s = merged["summary"];
  std::cout << "merged " << c.shards.size() << " shards: " << s["cases"] << " cases, " << s["failures"] << " failed\n";
  write_text_file(c.json_path, merged.dump(2) + "\n");
  if (!c.junit_path.empty()) write_text_file(c.junit_path, h::gate_junit(results, "larc fuzz"));
  if (!c.markdown_path.empty()) write_text_file(c.markdown_path, h::gate_markdown(results, merged.value("tree_hash", "")));
  return s["failures"].get<std::size_t>() ? 1 : 0;
}
}  // namespace

std::function<int()> add_merge_command(CLI::App& app) {
  auto c = std::make_shared<MergeCli>();
  CLI::App* cmd = app.add_subcommand("merge", "Join the JSON reports of every shard of one fuzz campaign into one report");
  cmd->add_option("SHARD", c->shards, "The shards' --json reports")->required();
  cmd->add_option("--json", c->json_path, "Write the merged report as JSON")->required();
  cmd->add_option("--junit", c->junit_path, "Write the merged results as JUnit XML");
  cmd->add_option("--markdown", c->markdown_path, "Write a Markdown summary of the merged results");
  return [cmd, c]() -> int { return cmd->parsed() ? run_merge(*c) : -1; };
}

}  // namespace larc::cli
