// The gate's registries, runner, shards and fixture layout (harness/): generated inputs have the
// shapes the mechanism declares; knobs are range-checked; an out-of-tree kernel registers with one
// call and is judged; the runner catches a nondeterministic kernel, a write past the end and a
// throwing launcher; the oracle escalates to float128 when double cannot certify it; shards are
// disjoint and cover the plan; a fixture round-trips and `diff`'s judge passes the oracle and fails
// a perturbed copy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "larc/fixtures/safetensors.h"
#include "larc/harness/fixture.h"
#include "larc/harness/gate.h"
#include "larc/harness/shard.h"

namespace {

namespace h = larc::harness;
using larc::ref::Dtype;

h::CaseSpec small_case(const std::string& mechanism, Dtype d = Dtype::fp32) {
  h::CaseSpec s;
  s.mechanism = mechanism;
  s.dtype = d;
  s.shape = {2, 37, 2, 5, 3};
  s.seed = 7;
  return s;
}

TEST(MechanismRegistry, GeneratedInputsHaveTheDeclaredShapesAndOutputsTheirs) {
  for (const h::Mechanism& m : h::mechanisms()) {
    const h::Shape s{2, 37, 3, 5, 4};
    const h::ValueMap in = m.generate(s, 11, m.resolve_knobs({}));
    EXPECT_EQ(m.shape_of(in), s) << m.name;
    const h::ValueMap out = m.compute(in, h::Precision::f64, larc::ref::Form::serial, 0);
    for (const h::TensorSpec& o : m.outputs) {
      if (o.optional && !out.count(o.name)) continue;  // a gradient of an optional input the case has not
      EXPECT_EQ(out.at(o.name).shape, h::dims_of(o.dims, s)) << m.name << " " << o.name;
    }
    // same seed, same inputs; another seed, other inputs
    EXPECT_EQ(m.generate(s, 11, m.resolve_knobs({})).at("q").data, in.at("q").data);
    EXPECT_NE(m.generate(s, 12, m.resolve_knobs({})).at("q").data, in.at("q").data);
  }
}

TEST(MechanismRegistry, KnobsAndShapesAreCheckedByName) {
  const h::Mechanism& gdn = h::find_mechanism("gdn");
  EXPECT_THROW(gdn.resolve_knobs({{"nope", 1}}), std::invalid_argument);
  EXPECT_THROW(gdn.resolve_knobs({{"collinearity", 2}}), std::invalid_argument);
  EXPECT_EQ(gdn.resolve_knobs({{"collinearity", 0.5}}).at("collinearity"), 0.5);
  EXPECT_THROW(h::find_mechanism("nope"), std::invalid_argument);
  h::ValueMap in = gdn.generate({1, 4, 1, 2, 2}, 1, gdn.resolve_knobs({}));
  in["g"] = larc::ref::Tensor<double>({1, 5, 1});
  try {
    gdn.shape_of(in);
    FAIL() << "a wrong gate shape must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input 'g'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(h::Shape::parse("1,2,3,4"), std::invalid_argument);
  EXPECT_THROW(h::Shape::parse("1,2,0,4,5"), std::invalid_argument);
  EXPECT_EQ(h::Shape::parse("1,256,2,64,64").str(), "1,256,2,64,64");
}

TEST(TypedTensor, RoundsOnceKeepsPoisonApartFromNaN) {
  larc::ref::Tensor<double> v({3});
  v.data = {1.0 + 1.0 / 512, -3.14159, 65520.0};
  const h::TypedTensor b = h::TypedTensor::encode(Dtype::bf16, v);
  EXPECT_EQ(b.get(0), 1.0);  // tie to even
  EXPECT_EQ(b.get(1), larc::ref::round_to(Dtype::bf16, -3.14159));
  const h::TypedTensor f = h::TypedTensor::encode(Dtype::fp16, v);
  EXPECT_TRUE(std::isinf(f.get(2)));  // 65520 rounds to inf in fp16
  h::TypedTensor p = h::TypedTensor::poisoned(Dtype::fp32, {2});
  EXPECT_TRUE(p.is_poison(0) && std::isnan(p.get(0)));
  p.set(0, std::nan(""));
  EXPECT_FALSE(p.is_poison(0));  // a computed NaN is not "never written"
  EXPECT_TRUE(p.guard_intact());
  p.f32()[2] = 0;  // one past the end
  EXPECT_FALSE(p.guard_intact());
}

h::Subject wrapping(const std::string& name, std::function<void(const h::TensorMap&, h::TensorMap&)> f) {
  h::Subject s;
  s.name = name;
  s.mechanism = "gdn";
  s.dtypes = {Dtype::fp32, Dtype::bf16};
  s.launch = std::move(f);
  return s;
}

void reference_serial(const h::TensorMap& in, h::TensorMap& out) {
  h::find_subject("ref-serial-f32", "gdn").launch(in, out);
}

TEST(Runner, PassesTheReferenceSubjectsAndCertifiesTheOracle) {
  const h::PreparedCase p = h::prepare_case(small_case("kla", Dtype::bf16));
  for (const h::Subject& s : h::subjects()) {
    if (s.mechanism != "kla") continue;
    const h::CaseResult r = h::run_subject(p, s);
    EXPECT_TRUE(r.pass) << s.name << testing::PrintToString(r.errors);
    EXPECT_TRUE(r.deterministic);
    for (const h::Judgement& j : r.outputs) EXPECT_GE(j.oracle_margin, 1000.0) << j.output;
  }
}

TEST(Runner, CatchesNondeterminismWritesPastTheEndAndThrows) {
  const h::PreparedCase p = h::prepare_case(small_case("gdn"));
  int calls = 0;
  const h::CaseResult flaky = h::run_subject(p, wrapping("flaky", [&](const h::TensorMap& in, h::TensorMap& out) {
    reference_serial(in, out);
    if (++calls == 2) out.at("o").f32()[0] += 1e-3f;
  }));
  EXPECT_FALSE(flaky.pass);
  EXPECT_FALSE(flaky.deterministic);
  const h::CaseResult overrun = h::run_subject(p, wrapping("overrun", [](const h::TensorMap& in, h::TensorMap& out) {
    reference_serial(in, out);
    out.at("final_state").f32()[out.at("final_state").size()] = 0;
  }));
  EXPECT_FALSE(overrun.pass);
  EXPECT_NE(testing::PrintToString(overrun.errors).find("written past its last element"), std::string::npos);
  const h::CaseResult thrower = h::run_subject(p, wrapping("thrower", [](const h::TensorMap&, h::TensorMap&) {
    throw std::runtime_error("launch failed");
  }));
  EXPECT_FALSE(thrower.pass);
  EXPECT_NE(testing::PrintToString(thrower.errors).find("launch failed"), std::string::npos);
  const h::CaseResult honest = h::run_subject(p, wrapping("honest", reference_serial));
  EXPECT_TRUE(honest.pass) << testing::PrintToString(honest.errors);
}

TEST(Runner, EscalatesTheOracleEstimateToFloat128AndFlagsWhatStaysUncertified) {
  const h::PreparedCase p = h::prepare_case(small_case("gdn"));
  const h::CaseResult r = h::run_subject(p, h::find_subject("ref-chunked-f32", "gdn"));
  EXPECT_EQ(r.oracle_method.find("float128"), std::string::npos) << r.oracle_method;
  EXPECT_TRUE(r.pass) << testing::PrintToString(r.errors);
  h::ToleranceConfig strict;
  strict.oracle_margin = 1e40;  // nothing certifies this: the runner escalates, then fails the case saying why
  const h::CaseResult u = h::run_subject(p, h::find_subject("ref-chunked-f32", "gdn"), strict);
  EXPECT_NE(u.oracle_method.find("float128"), std::string::npos) << u.oracle_method;
  EXPECT_FALSE(u.pass);
  EXPECT_NE(testing::PrintToString(u.errors).find("oracle's error estimate"), std::string::npos);
}

// A shape outside a subject's limits is not run for it; when that leaves nothing, the error says which
// limits refused it (vla-chunked at K = 3: "takes 16 ≤ K ≤ 128").
TEST(SubjectRegistry, AShapeBelowASubjectsSmallestKeyDimensionIsSkippedAndTheErrorSaysWhy) {
  h::Subject at_least_16 = wrapping("at-least-16", reference_serial);
  at_least_16.limits.min_K = 16;
  at_least_16.limits.max_K = 128;
  EXPECT_EQ(h::describe_limits(at_least_16.limits), "16 ≤ K ≤ 128");
  EXPECT_EQ(h::describe_limits(h::ShapeLimits{}), "any shape");
  h::register_subject(at_least_16);
  h::GateOptions o;
  o.subjects = {"at-least-16"};
  o.dtypes = {Dtype::fp32};
  o.shapes = {{1, 20, 1, 3, 3}};
  try {
    h::plan_gate(o);
    ADD_FAILURE() << "a plan with nothing to run";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at-least-16 takes 16 ≤ K ≤ 128, which no --shape meets"), std::string::npos)
        << e.what();
  }
  o.shapes.push_back({1, 20, 1, 16, 3});
  EXPECT_EQ(h::plan_gate(o).groups.size(), 1u);  // the K = 16 shape only
}

TEST(SubjectRegistry, AnOutOfTreeKernelRegistersWithOneCallAndIsGated) {
  h::register_subject(wrapping("out-of-tree-broken", [](const h::TensorMap& in, h::TensorMap& out) {
    reference_serial(in, out);
    out.at("o").f32()[5] *= 1.01f;
  }));
  EXPECT_THROW(h::register_subject(wrapping("out-of-tree-broken", reference_serial)), std::invalid_argument);
  h::Subject bad = wrapping("x", reference_serial);
  bad.mechanism = "nope";
  EXPECT_THROW(h::register_subject(bad), std::invalid_argument);
  h::GateOptions o;
  o.subjects = {"out-of-tree-broken"};
  o.dtypes = {Dtype::fp32};
  o.shapes = {{1, 20, 1, 4, 4}};
  const auto results = h::run_gate(h::plan_gate(o), h::Shard{});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].pass);
  EXPECT_EQ(results[0].spec.reproduce(),
            "larc gate --subject out-of-tree-broken --mechanism gdn --dtype fp32 --shape 1,20,1,4,4 --seed 1");
}

TEST(Shards, ResolveFromTheOptionAndEachEnvironment) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* n) -> const char* {
      const auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_EQ(h::resolve_shard("2/5", {}, env({})).shard.str(), "2/5");
  EXPECT_EQ(h::resolve_shard("", {}, env({{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "3"}})).shard.str(), "1/3");
  EXPECT_EQ(h::resolve_shard("", {}, env({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"},
                                          {"SLURM_ARRAY_TASK_MIN", "1"}})).shard.str(),
            "3/4");
  EXPECT_EQ(h::resolve_shard("", 8, env({{"JOB_COMPLETION_INDEX", "6"}})).shard.str(), "6/8");
  EXPECT_EQ(h::resolve_shard("", {}, env({{"JOB_COMPLETION_INDEX", "6"}, {"LARC_SHARD_COUNT", "7"}})).shard.str(), "6/7");
  EXPECT_EQ(h::resolve_shard("", {}, env({})).source, "none");
  EXPECT_THROW(h::resolve_shard("", {}, env({{"JOB_COMPLETION_INDEX", "6"}})), std::invalid_argument);
  EXPECT_THROW(h::resolve_shard("3/3", {}, env({})), std::invalid_argument);
  EXPECT_THROW(h::resolve_shard("", {}, env({{"GTEST_SHARD_INDEX", "1"}})), std::invalid_argument);
  EXPECT_THROW(h::parse_shard("1-2"), std::invalid_argument);
}

TEST(Fixture, RoundTripsAndJudgesCandidates) {
  const auto dir = std::filesystem::temp_directory_path() / ("larc_gate_runner_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const h::PreparedCase p = h::prepare_case(small_case("la-ratio", Dtype::bf16));
  h::write_fixture(dir / "f.safetensors", p);
  const h::PreparedCase q = h::read_fixture(dir / "f.safetensors");
  EXPECT_EQ(q.spec.mechanism, "la-ratio");
  EXPECT_EQ(q.spec.shape, p.spec.shape);
  EXPECT_EQ(q.spec.knobs, p.spec.knobs);
  EXPECT_EQ(q.oracle.at("o").data, p.oracle.at("o").data);
  EXPECT_EQ(q.oracle_error.at("final_normalizer"), p.oracle_error.at("final_normalizer"));
  EXPECT_EQ(q.inputs.at("k").decode().data, p.inputs.at("k").decode().data);
  // the oracle itself, written in float32, passes; the same with one timestep shifted fails
  h::TensorMap candidate{{"o", h::TypedTensor::encode(Dtype::fp32, q.oracle.at("o"))}};
  EXPECT_TRUE(h::judge_candidate(q, candidate).pass);
  larc::ref::Tensor<double> shifted = q.oracle.at("o");
  for (std::size_t i = 0; i < 3; ++i) shifted.data[shifted.data.size() / 2 + i] *= 1.05;
  candidate["o"] = h::TypedTensor::encode(Dtype::fp32, shifted);
  EXPECT_FALSE(h::judge_candidate(q, candidate).pass);
  candidate.erase("o");
  EXPECT_THROW(h::judge_candidate(q, candidate), std::invalid_argument);
  std::filesystem::remove_all(dir);
}

}  // namespace

// A case whose oracle leaves its dtype's range (here o of linear attention past fp16's 65504: 64 tokens
// of values 1e4 read with unit q·k) cannot be returned by any subject: it is skipped, named, and counted
// as such; the same inputs scaled into range are judged as usual.
TEST(OutsideRange, ACaseWhoseOracleOverflowsItsDtypeIsSkippedNotFailed) {
  h::CaseSpec spec = small_case("la", Dtype::fp16);
  spec.shape = {1, 64, 1, 4, 4};
  spec.subject = "ref-serial-f32";
  const h::Mechanism& m = h::find_mechanism("la");
  for (const double value : {1e4, 1.0}) {
    larc::harness::ValueMap in = m.generate(spec.shape, 1, m.resolve_knobs({}));
    for (double& x : in.at("q").data) x = 1;
    for (double& x : in.at("k").data) x = 1;
    for (double& x : in.at("v").data) x = value;
    const h::PreparedCase p = h::prepare_case(spec, in);
    const h::CaseResult r = h::run_subject(p, h::find_subject("ref-serial-f32", "la"));
    if (value > 1) {
      EXPECT_NE(h::outside_range(p).find("o: the oracle is"), std::string::npos) << h::outside_range(p);
      EXPECT_NE(r.skipped.find("outside fp16's range"), std::string::npos) << r.skipped;
      EXPECT_TRUE(r.pass);
      EXPECT_TRUE(r.outputs.empty());
      EXPECT_NE(h::gate_table({r}).find("1 skipped"), std::string::npos);
    } else {
      EXPECT_EQ(h::outside_range(p), "");
      EXPECT_TRUE(r.skipped.empty());
      EXPECT_TRUE(r.pass) << (r.errors.empty() ? "" : r.errors.front());
      EXPECT_FALSE(r.outputs.empty());
    }
  }
}

