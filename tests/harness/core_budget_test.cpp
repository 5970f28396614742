// The core budget (harness/cores.h): every mechanism's reference computation split over its
// (sequence, head) pairs on idle cores gives bitwise the outputs of one call over all of them — at
// every rung of the ladder the gate uses, in every form, and for the io baseline — TypedTensor's
// element-wise passes split over runs likewise, a case's inputs drawn in runs are bitwise those of
// one pass over the stream, and the gate's report does not depend on the number of cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "larc/cases/fla_tensors.h"
#include "larc/harness/cores.h"
#include "larc/harness/gate.h"
#include "larc/harness/typed_tensor.h"
#include "larc/reference/low_precision.h"

namespace {

namespace h = larc::harness;

// Every knob at its default but the initial state (random where a mechanism takes one), so that
// every optional input is split too.
h::KnobValues knobs_with_initial_state(const h::Mechanism& m) {
  h::KnobValues given;
  for (const h::Knob& k : m.knobs)
    if (k.name == h::kInitialStateKnob) given[k.name] = static_cast<double>(h::InitialState::random);
  return m.resolve_knobs(given);
}

void expect_bitwise_equal(const h::ValueMap& whole, const h::ValueMap& split, const std::string& what) {
  ASSERT_EQ(whole.size(), split.size()) << what;
  for (const auto& [name, t] : whole) {
    ASSERT_TRUE(split.count(name)) << what << " " << name;
    EXPECT_EQ(t.shape, split.at(name).shape) << what << " " << name;
    EXPECT_EQ(t.data, split.at(name).data) << what << " " << name << ": a pair's outputs landed elsewhere";
  }
}

// m's outputs on shape s computed on one core and split over four: bitwise equal at dd and double
// (serial), in float in every form, and for the io baseline.
void expect_split_is_exact(const h::Mechanism& m, const h::Shape& s) {
  const h::ValueMap in = m.generate(s, 5, knobs_with_initial_state(m));
  auto both = [&](const std::string& what, const std::function<h::ValueMap()>& run) {
    h::ValueMap whole, split;
    {
      const h::ScopedCoreBudget one(1);
      whole = run();
    }
    {
      const h::ScopedCoreBudget four(4);
      split = run();
    }
    expect_bitwise_equal(whole, split, m.name + " " + s.str() + " " + what);
  };
  for (h::Precision p : {h::Precision::dd, h::Precision::f64})
    both(std::string(h::precision_name(p)), [&] { return m.compute(in, p, larc::ref::Form::serial, 0); });
  for (larc::ref::Form form : m.forms)
    both("float form " + std::to_string(static_cast<int>(form)), [&] { return m.compute(in, h::Precision::f32, form, 4); });
  if (m.compute_io) both("io", [&] { return m.compute_io(in, larc::ref::OperandFormat::bf16, 4); });
  if (m.compute_rounding_draw)
    for (larc::ref::Form form : m.forms)
      both("rounding draw 3, form " + std::to_string(static_cast<int>(form)), [&] { return m.compute_rounding_draw(in, form, 4, 3); });
}

TEST(CoreBudget, SplittingOverSequencesAndHeadsIsBitwiseTheWholeCall) {
  for (const h::Mechanism& m : h::mechanisms()) {
    expect_split_is_exact(m, {2, 9, 3, 4, 4});
    if (m.groups_value_heads()) expect_split_is_exact(m, {2, 9, 3, 4, 4, 6});  // two value heads per query/key head
  }
}

TEST(CoreBudget, AnErrorInOnePairIsRaisedOnce) {
  const h::Mechanism& gdn = h::find_mechanism("gdn");
  h::ValueMap in = gdn.generate({2, 5, 2, 3, 3}, 1, gdn.resolve_knobs({}));
  in["g"] = larc::ref::Tensor<double>({2, 4, 2});  // T = 4 against q's 5: every pair's call throws
  const h::ScopedCoreBudget four(4);
  EXPECT_THROW(gdn.compute(in, h::Precision::f64, larc::ref::Form::serial, 0), std::exception);
}

TEST(CoreBudget, TheGateReportIsTheSameForAnyNumberOfCoresAndTheBudgetIsRestored) {
  h::GateOptions o;
  o.subjects = {"ref-chunked-f32"};
  o.mechanisms = {"gdn", "vla"};
  o.dtypes = {larc::ref::Dtype::fp32};
  o.grid = false;
  o.random = 2;
  o.seed = 3;
  const h::GatePlan plan = h::plan_gate(o);
  const auto one = h::run_gate(plan, {}, {}, {}, 1);
  const auto three = h::run_gate(plan, {}, {}, {}, 3);
  EXPECT_EQ(h::core_budget(), 1u);
  ASSERT_EQ(one.size(), three.size());
  for (std::size_t i = 0; i < one.size(); ++i)
    for (std::size_t j = 0; j < one[i].outputs.size(); ++j)
      EXPECT_EQ(one[i].outputs[j].worst_ratio, three[i].outputs[j].worst_ratio) << one[i].spec.reproduce();
}

}  // namespace

// TypedTensor's element-wise passes over a tensor of two runs (2^20 elements, then a ragged one):
// element by element what set/get and the poison give (every element of each run, the boundary
// included), and split over idle cores bitwise the bytes of one core, in every dtype.
TEST(CoreBudget, EncodingAndDecodingSplitOverCoresAreElementwiseAndBitwiseOneCore) {
  larc::ref::Tensor<double> values({1, (std::int64_t{1} << 20) + 7});
  for (std::size_t i = 0; i < values.data.size(); ++i) values.data[i] = std::ldexp(std::sin(0.37 * double(i)), int(i % 61) - 30);
  for (larc::ref::Dtype d : {larc::ref::Dtype::bf16, larc::ref::Dtype::fp16, larc::ref::Dtype::fp32, larc::ref::Dtype::fp64}) {
    const std::string name(larc::ref::dtype_name(d));
    std::vector<std::byte> bytes[2];
    for (unsigned cores : {1u, 4u}) {
      const h::ScopedCoreBudget budget(cores);
      const h::TypedTensor t = h::TypedTensor::encode(d, values);
      const h::TypedTensor p = h::TypedTensor::poisoned(d, values.shape);
      const std::vector<double> decoded = t.decode().data;
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < t.size(); ++i)
        wrong += t.get(i) != larc::ref::round_to(d, values.data[i]) || decoded[i] != t.get(i) || !p.is_poison(i);
      EXPECT_EQ(wrong, 0u) << name << " on " << cores << " cores";
      EXPECT_TRUE(t.guard_intact() && p.guard_intact()) << name;
      bytes[cores == 1 ? 0 : 1].assign(t.data(), t.data() + t.size_bytes());
    }
    EXPECT_EQ(bytes[0], bytes[1]) << name;
  }
}

// Every mechanism's inputs — Gaussian and uniform tensors and collinear keys drawn in runs on the idle
// cores — bitwise those drawn on one core, on a shape whose q spans three runs, in every key set and
// entry kind.
TEST(CoreBudget, CaseInputsDrawnInRunsOnIdleCoresAreBitwiseOnePassInOrder) {
  const h::Shape s{.B = 2, .T = 700, .H = 3, .K = 32, .V = 32};
  for (const std::string name : {"gdn", "gla", "log-linear-gdn", "ccq-gdn"}) {
    const h::Mechanism& m = h::find_mechanism(name);
    for (int key_set = 0; key_set < larc::cases::kKeySets; ++key_set) {
      h::KnobValues given{{"key_set", double(key_set)}, {"entries", double(key_set == 2)}};
      for (auto it = given.begin(); it != given.end();)
        it = std::any_of(m.knobs.begin(), m.knobs.end(), [&](const h::Knob& k) { return k.name == it->first; })
                 ? std::next(it) : given.erase(it);
      h::ValueMap inputs[2];
      for (unsigned cores : {1u, 4u}) {
        const h::ScopedCoreBudget budget(cores);
        inputs[cores == 1 ? 0 : 1] = m.generate(s, 17, m.resolve_knobs(given));
      }
      expect_bitwise_equal(inputs[0], inputs[1], name + " key_set " + std::to_string(key_set));
    }
  }
}

// A value that takes more draws than the others (a rejection) displaces every run after it: the runs
// are drawn again in order, so the values and the stream's state after still equal one pass in order,
// whichever order the runs ran in.
TEST(CoreBudget, ARejectionInOneRunRedrawsInOrder) {
  using larc::cases::Rng;
  const std::size_t n = 1000, rejecting = 437;
  auto draw_into = [&](std::vector<double>& out) {
    return [&out, rejecting](Rng& r, std::size_t i) {
      if (i == rejecting) r.uniform();  // a rejected draw
      out[i] = r.uniform();
    };
  };
  const auto backwards = [](std::size_t count, std::size_t run, const std::function<void(std::size_t, std::size_t)>& fn) {
    for (std::size_t begin = (count - 1) / run * run;; begin -= run) {
      fn(begin, std::min(count, begin + run));
      if (begin == 0) break;
    }
  };
  std::vector<double> in_order(n), in_runs(n);
  Rng a(3), b(3);
  larc::cases::draw_in_runs(a, n, 64, 1, larc::cases::in_order, draw_into(in_order));
  larc::cases::draw_in_runs(b, n, 64, 1, backwards, draw_into(in_runs));
  EXPECT_EQ(in_order, in_runs);
  EXPECT_TRUE(a == b) << "the stream's state after differs";
  Rng c(3);
  c.skip(n + 1);
  EXPECT_TRUE(a == c) << "n values and one rejected draw leave the stream n + 1 draws on";
}
