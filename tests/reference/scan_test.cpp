// The generic Blelloch scan (reference/scan.h) against a serial fold, on operators that are
// associative but not commutative (string concatenation, exact 2×2 rational matrix products), at
// sizes around powers of two; and a non-associative operator that it must expose.
#include <gtest/gtest.h>

#include <string>

#include "larc/reference/scalar.h"
#include "larc/reference/scan.h"
#include "larc/reference/types.h"

namespace {
using namespace larc::ref;

TEST(BlellochScan, ConcatenationMatchesSerialAtEverySize) {
  const auto cat = [](const std::string& a, const std::string& b) { return a + b; };
  for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 16u, 17u, 33u}) {
    std::vector<std::string> x;
    for (std::size_t i = 0; i < n; ++i) x.push_back(std::string(1, static_cast<char>('a' + i % 26)));
    const auto ex = scan::blelloch_exclusive(x, cat, std::string());
    const auto in = scan::blelloch_inclusive(x, cat, std::string());
    const auto ser = scan::serial_inclusive(x, cat);
    ASSERT_EQ(ex.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(ex[i], i == 0 ? std::string() : ser[i - 1]) << "n=" << n << " i=" << i;
      EXPECT_EQ(in[i], ser[i]) << "n=" << n << " i=" << i;
    }
  }
}

TEST(BlellochScan, RationalMatrixProductsExact) {
  using M = Mat<rational>;
  const auto mul = [](const M& a, const M& b) -> M { return a * b; };
  std::vector<M> x;
  for (int i = 0; i < 13; ++i) {
    M m(2, 2);
    m << rational(i + 1, 3), rational(-2, i + 5), rational(i, 7), rational(1, i + 2);
    x.push_back(m);
  }
  const auto in = scan::blelloch_inclusive(x, mul, M(M::Identity(2, 2)));
  const auto ser = scan::serial_inclusive(x, mul);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(in[i] == ser[i]) << "i=" << i;
}

TEST(BlellochScan, ExposesANonAssociativeOperator) {
  // a ⊖ b = a − b is not associative: the tree's grouping differs from the fold's from n = 3 on.
  const auto minus = [](const rational& a, const rational& b) { return rational(a - b); };
  std::vector<rational> x = {rational(5), rational(3), rational(2), rational(1)};
  const auto in = scan::blelloch_inclusive(x, minus, rational(0));
  const auto ser = scan::serial_inclusive(x, minus);
  bool differs = false;
  for (std::size_t i = 0; i < x.size(); ++i) differs = differs || !(in[i] == ser[i]);
  EXPECT_TRUE(differs);
}

}  // namespace
