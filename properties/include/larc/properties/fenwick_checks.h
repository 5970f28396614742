// The checks behind LL-C1 (SPEC §4), separate from the claim so that tests can feed them a planted
// defect (a level function off by one, a wrong bucket) and see them fail.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "larc/reference/fenwick.h"

namespace larc::props {

using LevelFunction = std::function<int(std::uint64_t t, std::uint64_t s)>;

// The buckets of query t must be disjoint intervals that cover [0, t] exactly, level ℓ ≥ 1 must hold
// 2^{ℓ−1} tokens and exist iff bit ℓ−1 of t is set, and level(t, s) must give each bucket's level for
// its first and last token and for `probes` further tokens spread over it (every token when probes
// is at least the bucket size). Returns what failed, or nullopt.
std::optional<std::string> check_buckets(std::uint64_t t, const std::vector<ref::fenwick::Bucket>& buckets,
                                         const LevelFunction& level, std::uint64_t probes);

// ⌈log2 T⌉ + 1 computed without bit tricks (doubling a power of two until it reaches T).
int level_count_by_doubling(std::uint64_t T);

}  // namespace larc::props
