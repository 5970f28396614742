#include "larc/properties/fenwick_checks.h"

#include <algorithm>
#include <bit>

namespace larc::props {

std::optional<std::string> check_buckets(std::uint64_t t, const std::vector<ref::fenwick::Bucket>& buckets,
                                         const LevelFunction& level, std::uint64_t probes) {
  const std::string at = " at t=" + std::to_string(t);
  std::vector<ref::fenwick::Bucket> sorted = buckets;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::uint64_t next = 0;  // the first token not yet covered
  for (const auto& b : sorted) {
    const std::string which = " (level " + std::to_string(b.level) + ")";
    if (b.size == 0) return "empty bucket" + which + at;
    if (b.first != next)
      return (b.first < next ? "overlapping buckets" : "gap before bucket") + which + at + ": starts at " +
             std::to_string(b.first) + ", expected " + std::to_string(next);
    next = b.first + b.size;
    const std::uint64_t want_size = b.level == 0 ? 1 : std::uint64_t{1} << (b.level - 1);
    if (b.size != want_size)
      return "bucket" + which + " holds " + std::to_string(b.size) + " tokens, expected " + std::to_string(want_size) + at;
    if (b.level >= 1 && ((t >> (b.level - 1)) & 1) == 0) return "bucket" + which + " exists but its bit of t is clear" + at;
    const std::uint64_t stride = std::max<std::uint64_t>(1, b.size / std::max<std::uint64_t>(1, probes));
    for (std::uint64_t off = 0; off < b.size; off += stride) {
      for (std::uint64_t s : {b.first + off, b.first + b.size - 1 - off}) {
        const int l = level(t, s);
        if (l != b.level)
          return "level(t, s) = " + std::to_string(l) + " for s=" + std::to_string(s) + " in bucket" + which + at;
      }
    }
  }
  if (next != t + 1) return "buckets cover [0, " + std::to_string(next) + "), expected [0, " + std::to_string(t + 1) + ")" + at;
  const int expected_count = std::popcount(t) + 1;
  if (static_cast<int>(buckets.size()) != expected_count)
    return std::to_string(buckets.size()) + " buckets, expected popcount(t) + 1 = " + std::to_string(expected_count) + at;
  return std::nullopt;
}

int level_count_by_doubling(std::uint64_t T) {
  int ceil_log2 = 0;
  for (std::uint64_t p = 1; p < T; p *= 2) ++ceil_log2;
  return ceil_log2 + 1;
}

}  // namespace larc::props
