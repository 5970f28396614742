// The Fenwick level function and bucket enumeration (reference/fenwick.h, SPEC §4): level(t, s)
// against a definition by repeated halving, buckets disjoint and covering for every t < 2^14 (all
// tokens probed for t < 2^11) and for random t < 2^62, level_count(T) = ⌈log2 T⌉ + 1 against the
// levels a length-T sequence actually touches, the checks fail on planted defects, and chunks of 64 are
// tokens six levels up (the decomposition of log-linear-chunked).
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "larc/properties/fenwick_checks.h"
#include "larc/reference/fenwick.h"

namespace fw = larc::ref::fenwick;
using larc::props::check_buckets;

namespace {

// 1 + ⌊log2(t xor s)⌋ by halving, the definition without bit tricks.
int level_by_halving(std::uint64_t t, std::uint64_t s) {
  if (s == t) return 0;
  int floor_log2 = 0;
  for (std::uint64_t x = t ^ s; x > 1; x /= 2) ++floor_log2;
  return 1 + floor_log2;
}

const larc::props::LevelFunction kLevel = [](std::uint64_t t, std::uint64_t s) { return fw::level(t, s); };

}  // namespace

TEST(Fenwick, LevelMatchesTheDefinition) {
  for (std::uint64_t t = 0; t < 600; ++t)
    for (std::uint64_t s = 0; s <= t; ++s) ASSERT_EQ(fw::level(t, s), level_by_halving(t, s)) << t << "," << s;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t t = rng() % fw::kPositionLimit, s = rng() % (t + 1);
    ASSERT_EQ(fw::level(t, s), level_by_halving(t, s)) << t << "," << s;
  }
  EXPECT_EQ(fw::level(fw::kPositionLimit - 1, 0), 62);
}

TEST(Fenwick, BucketsPartitionEveryPrefixBelow2To14) {
  for (std::uint64_t t = 0; t < (1u << 14); ++t) {
    const auto failure = check_buckets(t, fw::buckets(t), kLevel, t < (1u << 11) ? t + 1 : 8);
    ASSERT_FALSE(failure) << *failure;
    ASSERT_EQ(fw::live_levels(t), static_cast<int>(fw::buckets(t).size()));
  }
}

TEST(Fenwick, BucketsPartitionRandomPrefixesBelow2To62) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t t = rng() >> (2 + rng() % 62);  // all magnitudes up to 2^62
    const auto failure = check_buckets(t, fw::buckets(t), kLevel, 16);
    ASSERT_FALSE(failure) << *failure;
  }
  const auto last = fw::buckets(fw::kPositionLimit - 1);
  EXPECT_EQ(last.size(), 63u);  // level 0 and one bucket per set bit
  EXPECT_EQ(last.back().size, std::uint64_t{1} << 61);
}

// level_count(T) = ⌈log2 T⌉ + 1 is the number of distinct levels over all pairs s ≤ t < T.
TEST(Fenwick, LevelCountIsTheNumberOfLevelsTouched) {
  std::set<int> touched;
  for (std::uint64_t T = 1; T <= (1u << 14); ++T) {
    for (const auto& b : fw::buckets(T - 1)) touched.insert(b.level);
    ASSERT_EQ(static_cast<int>(touched.size()), fw::level_count(T)) << "T=" << T;
    ASSERT_EQ(*touched.rbegin() + 1, fw::level_count(T)) << "levels are 0.." << *touched.rbegin();
    ASSERT_EQ(fw::level_count(T), larc::props::level_count_by_doubling(T)) << "T=" << T;
  }
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t T = 1 + (rng() >> (2 + rng() % 62)) % (fw::kPositionLimit - 1);
    ASSERT_EQ(fw::level_count(T), larc::props::level_count_by_doubling(T)) << "T=" << T;
  }
}

TEST(Fenwick, BadPositionsThrowNamingTheField) {
  EXPECT_THROW(fw::level(3, 4), std::invalid_argument);
  EXPECT_THROW(fw::level(fw::kPositionLimit, 0), std::invalid_argument);
  EXPECT_THROW(fw::buckets(fw::kPositionLimit), std::invalid_argument);
  EXPECT_THROW(fw::level_count(0), std::invalid_argument);
  try {
    fw::level(fw::kPositionLimit, 0);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("t must be < 2^62"), std::string::npos) << e.what();
  }
}

// The checks are not vacuous: a level function off by one, a bucket shifted by one token, a bucket
// dropped, and the level count ⌈log2 T⌉ (without the + 1) are all caught.
TEST(Fenwick, ChecksCatchPlantedDefects) {
  const larc::props::LevelFunction off_by_one = [](std::uint64_t t, std::uint64_t s) {
    return s == t ? 0 : fw::level(t, s) + 1;
  };
  const larc::props::LevelFunction floor_of_log_only = [](std::uint64_t t, std::uint64_t s) {
    return s == t ? 0 : std::bit_width(t ^ s) - 1;  // ⌊log2(t xor s)⌋ without the 1 +
  };
  int caught_level = 0, caught_floor = 0, caught_shift = 0, caught_drop = 0;
  for (std::uint64_t t = 1; t < 300; ++t) {
    caught_level += check_buckets(t, fw::buckets(t), off_by_one, 4).has_value();
    caught_floor += check_buckets(t, fw::buckets(t), floor_of_log_only, 4).has_value();
    auto shifted = fw::buckets(t);
    shifted.back().first += 1;
    caught_shift += check_buckets(t, shifted, kLevel, 4).has_value();
    auto dropped = fw::buckets(t);
    dropped.pop_back();
    caught_drop += check_buckets(t, dropped, kLevel, 4).has_value();
  }
  EXPECT_EQ(caught_level, 299);
  EXPECT_EQ(caught_floor, 299);
  EXPECT_EQ(caught_shift, 299);
  EXPECT_EQ(caught_drop, 299);
  int wrong_count = 0;
  for (std::uint64_t T = 2; T < 100; ++T) wrong_count += (static_cast<int>(std::bit_width(T - 1)) != fw::level_count(T));
  EXPECT_EQ(wrong_count, 98);
}

// log-linear-chunked's decomposition (gpu/src/log_linear_chunked.cu): with chunks of 64 tokens starting
// at multiples of 64, a pair in one chunk has the level of its in-chunk indices, and a pair in chunks
// c' < c has level 6 + level(c, c'); the Fenwick buckets of chunk c (chunks for tokens, levels m ≥ 1) are
// exactly the token buckets of levels ≥ 7 of every token of chunk c.
TEST(Fenwick, ChunksOf64AreTokensSixLevelsUp) {
  constexpr int bits = 6;
  constexpr std::uint64_t chunk = std::uint64_t{1} << bits;
  std::mt19937_64 rng(13);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t t = rng() >> (2 + rng() % 62), s = rng() % (t + 1);
    const std::uint64_t c = t >> bits, c_s = s >> bits;
    const int expected = c == c_s ? fw::level(t % chunk, s % chunk) : bits + fw::level(c, c_s);
    ASSERT_EQ(fw::level(t, s), expected) << t << "," << s;
  }
  for (std::uint64_t t = 0; t < (1u << 14); ++t) {
    std::vector<fw::Bucket> inter;  // token buckets of levels > 6
    for (const auto& b : fw::buckets(t))
      if (b.level > bits) inter.push_back(b);
    std::vector<fw::Bucket> from_chunks;
    for (const auto& b : fw::buckets(t >> bits))
      if (b.level >= 1) from_chunks.push_back({b.level + bits, b.first * chunk, b.size * chunk});
    ASSERT_EQ(inter.size(), from_chunks.size()) << t;
    for (std::size_t j = 0; j < inter.size(); ++j) {
      EXPECT_EQ(inter[j].level, from_chunks[j].level) << t;
      EXPECT_EQ(inter[j].first, from_chunks[j].first) << t;
      EXPECT_EQ(inter[j].size, from_chunks[j].size) << t;
    }
  }
}
