#include "larc/harness/shard.h"

#include <cstdlib>
#include <stdexcept>

namespace larc::harness {

namespace {
std::uint64_t parse_count(const std::string& text, const std::string& field) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 18)
    throw std::invalid_argument(field + ": expected a whole number, got '" + text + "'");
  return std::stoull(text);
}

Shard checked(std::uint64_t index, std::uint64_t count, const std::string& field) {
  if (count == 0) throw std::invalid_argument(field + ": the shard count must be at least 1");
  if (index >= count)
    throw std::invalid_argument(field + ": shard index " + std::to_string(index) + " is not below the count " +
                                std::to_string(count));
  return {index, count};
}
}  // namespace

Shard parse_shard(const std::string& text, const std::string& field) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw std::invalid_argument(field + ": expected j/n (e.g. 0/4), got '" + text + "'");
  return checked(parse_count(text.substr(0, slash), field), parse_count(text.substr(slash + 1), field), field);
}

ResolvedShard resolve_shard(const std::string& option, std::optional<std::uint64_t> count_option, const EnvLookup& env) {
  const EnvLookup get = env ? env : EnvLookup([](const char* n) { return std::getenv(n); });
  auto var = [&](const char* name) -> std::optional<std::string> {
    const char* v = get(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
  if (!option.empty()) return {parse_shard(option), "--shard"};
  if (auto i = var("GTEST_SHARD_INDEX")) {
    const auto n = var("GTEST_TOTAL_SHARDS");
    if (!n) throw std::invalid_argument("GTEST_SHARD_INDEX is set but GTEST_TOTAL_SHARDS is not");
    return {checked(parse_count(*i, "GTEST_SHARD_INDEX"), parse_count(*n, "GTEST_TOTAL_SHARDS"), "GTEST_SHARD_INDEX"),
            "GTEST_SHARD_INDEX"};
  }
  if (auto i = var("SLURM_ARRAY_TASK_ID")) {
    const auto n = var("SLURM_ARRAY_TASK_COUNT");
    if (!n) throw std::invalid_argument("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not");
    const std::uint64_t id = parse_count(*i, "SLURM_ARRAY_TASK_ID");
    const std::uint64_t min = var("SLURM_ARRAY_TASK_MIN") ? parse_count(*var("SLURM_ARRAY_TASK_MIN"), "SLURM_ARRAY_TASK_MIN") : 0;
    if (id < min) throw std::invalid_argument("SLURM_ARRAY_TASK_ID is below SLURM_ARRAY_TASK_MIN");
    return {checked(id - min, parse_count(*n, "SLURM_ARRAY_TASK_COUNT"), "SLURM_ARRAY_TASK_ID"), "SLURM_ARRAY_TASK_ID"};
  }
  if (auto i = var("JOB_COMPLETION_INDEX")) {
    std::optional<std::uint64_t> n = count_option;
    if (!n && var("LARC_SHARD_COUNT")) n = parse_count(*var("LARC_SHARD_COUNT"), "LARC_SHARD_COUNT");
    if (!n)
      throw std::invalid_argument(
          "JOB_COMPLETION_INDEX is set but the shard count is not: give --shard-count or LARC_SHARD_COUNT (the "
          "Indexed Job's completions)");
    return {checked(parse_count(*i, "JOB_COMPLETION_INDEX"), *n, "JOB_COMPLETION_INDEX"), "JOB_COMPLETION_INDEX"};
  }
  return {Shard{}, "none"};
}

}  // namespace larc::harness
