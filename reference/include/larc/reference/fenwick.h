// The Fenwick hierarchy of log-linear attention (SPEC §4), in integer bit operations only (never a
// floating log). Positions are 0-indexed tokens t, s with s ≤ t < 2^62.
//
//   level ℓ(t, t) = 0;  for s < t, ℓ(t, s) = 1 + ⌊log2(t xor s)⌋ = bit_width(t xor s).
//
// At query time t, level 0 holds t itself and level ℓ ≥ 1 holds tokens only if bit ℓ−1 of t is set:
// then the 2^{ℓ−1} tokens [t_ℓ − 2^{ℓ−1}, t_ℓ), t_ℓ = t with its low ℓ−1 bits cleared. Those are the
// buckets; a sequence of T tokens touches the levels 0..⌈log2 T⌉ (level_count(T) = ⌈log2 T⌉ + 1).
#pragma once

#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace larc::ref::fenwick {

// The largest position (exclusive) the functions accept.
inline constexpr std::uint64_t kPositionLimit = std::uint64_t{1} << 62;

inline void require_position(std::uint64_t t, const char* field) {
  if (t >= kPositionLimit)
    throw std::invalid_argument(std::string("fenwick: ") + field + " must be < 2^62, got " + std::to_string(t));
}

// ℓ(t, s) for s ≤ t.
inline int level(std::uint64_t t, std::uint64_t s) {
  require_position(t, "t");
  if (s > t) throw std::invalid_argument("fenwick::level: s must be <= t, got s=" + std::to_string(s) + " t=" + std::to_string(t));
  return std::bit_width(t ^ s);  // 0 when s == t; else 1 + ⌊log2(t xor s)⌋
}

// ⌈log2 T⌉ + 1 for T ≥ 1: ⌈log2 T⌉ = bit_width(T − 1).
inline int level_count(std::uint64_t T) {
  if (T < 1) throw std::invalid_argument("fenwick::level_count: T must be >= 1");
  require_position(T - 1, "T - 1");
  return std::bit_width(T - 1) + 1;
}

// The tokens s ≤ t at one level for query t: [first, first + size).
struct Bucket {
  int level = 0;
  std::uint64_t first = 0, size = 0;
};

// The non-empty buckets of query t, level 0 first, then by increasing level (newest tokens first).
inline std::vector<Bucket> buckets(std::uint64_t t) {
  require_position(t, "t");
  std::vector<Bucket> out{{0, t, 1}};
  for (std::uint64_t rest = t; rest != 0; rest &= rest - 1) {
    const int bit = std::countr_zero(rest);  // bit ℓ − 1 of t is set
    const std::uint64_t size = std::uint64_t{1} << bit;
    const std::uint64_t end = t & ~(size - 1);  // t_ℓ: t with its low ℓ − 1 bits cleared
    out.push_back({bit + 1, end - size, size});
  }
  return out;
}

// The levels of the buckets that the tokens [0, t0) form at query t0, increasing: ℓ = b + 1 for every set
// bit b of t0 (buckets(t0) without level 0). Tokens of one such bucket share their level with every later
// query t ≥ t0, so a sequence continued after t0 tokens needs one state per level here, no more.
inline std::vector<int> carried_levels(std::uint64_t t0) {
  require_position(t0, "t0");
  std::vector<int> out;
  for (std::uint64_t rest = t0; rest != 0; rest &= rest - 1) out.push_back(std::countr_zero(rest) + 1);
  return out;
}

// Non-empty levels at query t: level 0 and one per set bit of t.
inline int live_levels(std::uint64_t t) {
  require_position(t, "t");
  return std::popcount(t) + 1;
}

}  // namespace larc::ref::fenwick
