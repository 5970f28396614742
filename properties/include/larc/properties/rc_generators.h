// RapidCheck generators for the cases of generators.h: RapidCheck picks and shrinks the discrete
// choices (sizes shrink toward 1, regimes toward the first enumerator, the seed toward 0).
#pragma once

#include <rapidcheck.h>

#include "larc/properties/generators.h"

namespace larc::props {

struct DeltaCaseLimits {
  int max_T = 80, max_dk = 9, max_dv = 7;
};

inline rc::Gen<DeltaCase> gen_delta_case(DeltaCaseLimits lim = {}) {
  return rc::gen::build<DeltaCase>(
      rc::gen::set(&DeltaCase::seed, rc::gen::arbitrary<std::uint64_t>()),
      rc::gen::set(&DeltaCase::T, rc::gen::inRange(1, lim.max_T + 1)),
      rc::gen::set(&DeltaCase::dk, rc::gen::inRange(1, lim.max_dk + 1)),
      rc::gen::set(&DeltaCase::dv, rc::gen::inRange(1, lim.max_dv + 1)),
      rc::gen::set(&DeltaCase::keys, rc::gen::map(rc::gen::inRange(0, kKeyKinds), [](int i) { return KeyKind(i); })),
      rc::gen::set(&DeltaCase::gates, rc::gen::map(rc::gen::inRange(0, kGateKinds), [](int i) { return GateKind(i); })),
      rc::gen::set(&DeltaCase::with_initial_state, rc::gen::arbitrary<bool>()));
}

}  // namespace larc::props

namespace rc {
template <>
struct Arbitrary<larc::props::DeltaCase> {
  static Gen<larc::props::DeltaCase> arbitrary() { return larc::props::gen_delta_case(); }
};
}  // namespace rc

// RapidCheck prints values with showValue; make cases print as their reproducer.
namespace larc::props {
inline void showValue(const DeltaCase& c, std::ostream& os) { os << c.describe(); }
}  // namespace larc::props
