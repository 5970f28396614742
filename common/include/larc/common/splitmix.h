// splitmix64 (Steele, Lea and Flood 2014): a Weyl counter and a finaliser that mixes its 64 bits, the one
// generator of every layer's fixed, portable random numbers (cases' Rng, the dd unit-roundoff measurement,
// the reference's rounding draws).
#pragma once

#include <cstdint>

namespace larc::splitmix {

inline constexpr std::uint64_t kIncrement = 0x9e3779b97f4a7c15ull;  // the Weyl increment

// The finaliser: every output bit depends on every input bit.
constexpr std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The next number of the generator whose counter is `state`.
constexpr std::uint64_t next(std::uint64_t& state) { return mix(state += kIncrement); }

}  // namespace larc::splitmix
