// What the exact (rational) HLA form tests share: their parameter (T, normalised, decayed), its readable
// test name, and the exact comparison of two results.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "larc/reference/hla_common.h"
#include "larc/reference/scalar.h"

namespace larc::hla_exact {

using Param = std::tuple<Eigen::Index, bool, bool>;  // (T, normalised, decayed)

inline std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [T, normalized, decayed] = info.param;
  return "T" + std::to_string(T) + (normalized ? "_normalised" : "_plain") + (decayed ? "_gamma3over4" : "_nodecay");
}

inline void expect_same(const ref::hla::Result<ref::rational>& got, const ref::hla::Result<ref::rational>& want,
                        const std::string& what) {
  EXPECT_TRUE(got.o == want.o) << what << ": outputs differ";
  EXPECT_TRUE(got.den == want.den) << what << ": denominators differ";
}

}  // namespace larc::hla_exact
