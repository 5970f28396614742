// The delta-rule family's three mechanisms and a sequence shape, as the reference tests of the
// family (forms and backward) name them.
#pragma once

#include <Eigen/Core>

#include <ostream>
#include <string>

namespace larc::testing {

enum class Mechanism { deltanet, gdn, kla };

inline std::string mechanism_name(Mechanism m) {
  switch (m) {
    case Mechanism::deltanet: return "DeltaNet";
    case Mechanism::gdn: return "GDN";
    case Mechanism::kla: return "KLA";
  }
  return "?";
}

// gtest prints test parameters through this (found by argument-dependent lookup).
inline void PrintTo(Mechanism m, std::ostream* os) { *os << mechanism_name(m); }

struct Shape {
  Eigen::Index T, dk, dv;
  bool initial_state;
};

}  // namespace larc::testing
