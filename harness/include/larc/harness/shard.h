// Sharding of a case list or a campaign (DESIGN.md "The program"): shard j of n runs the case
// indices i ≡ j (mod n), so n machines or GPUs run one campaign and their merged results equal one
// unsharded run. The shard comes from, in this order:
//   --shard j/n                                     (the option, 0-based j)
//   GTEST_SHARD_INDEX, GTEST_TOTAL_SHARDS           (GoogleTest / ctest sharding, Bazel)
//   SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT     (a Slurm job array; j = ID − SLURM_ARRAY_TASK_MIN)
//   JOB_COMPLETION_INDEX with a count from --shard-count or LARC_SHARD_COUNT (a Kubernetes Indexed
//   Job sets only the index)
// and is 0/1 (everything) when none is set.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace larc::harness {

struct Shard {
  std::uint64_t index = 0, count = 1;
  bool holds(std::uint64_t case_index) const { return case_index % count == index; }
  std::string str() const { return std::to_string(index) + "/" + std::to_string(count); }
};

struct ResolvedShard {
  Shard shard;
  std::string source;  // "--shard", "GTEST_SHARD_INDEX", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX" or "none"
};

// "j/n" with 0 ≤ j < n; throws std::invalid_argument naming `field`.
Shard parse_shard(const std::string& text, const std::string& field = "--shard");

using EnvLookup = std::function<const char*(const char*)>;
// Resolves the shard as the header says; `option` is --shard's text ("" when not given). Malformed or
// inconsistent values (an index ≥ the count, a JOB_COMPLETION_INDEX without a count) throw
// std::invalid_argument naming the variable.
ResolvedShard resolve_shard(const std::string& option, std::optional<std::uint64_t> count_option = {},
                            const EnvLookup& env = {});

}  // namespace larc::harness
