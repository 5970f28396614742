// Property (RapidCheck over gen_delta_case: every key kind and gate regime, T ≤ 80, d_k ≤ 9, d_v ≤ 7):
// the GDN chunked form with a random chunk size C ∈ [1, 17] agrees with the serial recurrence in
// double, to c·(T + d_k)·G·u·M (delta_rule_forms_check.h) with the magnitudes M taken from the
// dd_real oracle's run of the same problem. Cases whose oracle overflows (huge keys with β‖k‖² ≫ 2
// grow the state by ~β‖k‖² per token) are discarded: there is nothing finite to compare against.
//
// Reproducing: the RapidCheck seed is recorded as the JUnit property rapidcheck_seed and a failing
// case (after shrinking) as failing_case; rerun with RC_PARAMS="seed=<seed>" or with the
// RC_PARAMS="reproduce=..." string RapidCheck prints.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <string>

#include "delta_rule_forms_check.h"
#include "larc/properties/rc_generators.h"

namespace {

using namespace larc::testing;
namespace props = larc::props;
namespace ref = larc::ref;

RC_GTEST_PROP(DeltaRuleChunkedProperty, ChunkedAgreesWithSerialInDoubleToTheOraclesMagnitude, ()) {
  ::testing::Test::RecordProperty("rapidcheck_seed", std::to_string(rc::detail::configuration().testParams.seed));
  const props::DeltaCase c = *props::gen_delta_case();
  const int chunk = *rc::gen::inRange(1, 18);
  const dr::Problem<double> p = props::gdn_problem(c);
  const Magnitudes m = magnitudes(props::cast_problem<ref::dd>(p));  // the dd oracle's states
  RC_PRE(std::isfinite(m.output) && std::isfinite(m.state));
  RC_TAG(props::key_kind_name(c.keys), props::gate_kind_name(c.gates));

  const ref::SeqResult<double> serial = dr::serial(p), chunked = dr::chunked(p, chunk);
  const double u = ref::unit_roundoff<double>();
  const double growth = growth_factor(p);
  const double err_o = max_abs_diff<double>(chunked.o, serial.o);
  const double err_s = max_abs_diff<double>(chunked.final_state, serial.final_state);
  const bool ok = err_o <= kGrowthConstant * growth * u * m.output && err_s <= kGrowthConstant * growth * u * m.state;
  if (!ok) ::testing::Test::RecordProperty("failing_case", c.describe() + " chunk=" + std::to_string(chunk));
  RC_LOG() << c.describe() << " chunk=" << chunk << ": |o| error " << err_o / (growth * u * m.output)
           << ", |S| error " << err_s / (growth * u * m.state) << " (T + d_k)·G·u·M, allowed " << kGrowthConstant;
  RC_ASSERT(err_o <= kGrowthConstant * growth * u * m.output);
  RC_ASSERT(err_s <= kGrowthConstant * growth * u * m.state);
}

}  // namespace
