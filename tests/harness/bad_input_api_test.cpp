// The bad-input matrix of the C++ API (docs/robustness.md): one test per row, each asserting that the
// input is refused with an exception whose message names the field — never a crash, a silent NaN or
// a hang. Rows for the safetensors reader beyond safetensors_corruption_test, fixture validation
// (bad_fixtures.h), Shape::parse, Mechanism::shape_of, run_case / run_subject / judge_candidate and
// the fuzz campaign's reports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>

#include "bad_fixtures.h"
#include "larc/harness/fuzz.h"
#include "larc/harness/fuzz_report.h"
#include "larc/harness/subject.h"
#include "safetensors_test_bytes.h"

namespace {

namespace fx = larc::fixtures;
namespace h = larc::harness;
using larc::ref::Dtype;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

// Runs `f`, which must throw E with a message matching `pattern`.
template <class E = std::invalid_argument, class F>
void expect_refused(F&& f, const std::string& pattern) {
  try {
    f();
  } catch (const E& e) {
    EXPECT_TRUE(std::regex_search(e.what(), std::regex(pattern))) << "message: " << e.what() << "\nexpected /" << pattern << "/";
    return;
  }
  ADD_FAILURE() << "accepted; expected a refusal matching /" << pattern << "/";
}

std::filesystem::path scratch() {
  return std::filesystem::temp_directory_path() / ("larc_bad_input_api_test_" + std::to_string(::getpid()));
}

// --- the safetensors reader (rows not in safetensors_corruption_test) ------------------------------

TEST(BadInputSafetensors, HeaderLengthAboveTheFormatsLimit) {
  // A real 100 MB header: the limit is checked only once the bytes are there.
  const std::uint64_t n = 100'000'001;
  std::vector<std::byte> file(8 + n, std::byte{' '});
  for (int i = 0; i < 8; ++i) file[i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  file[8] = std::byte{'{'};
  expect_refused<fx::FixtureError>([&] { fx::parse_safetensors(file, "huge.safetensors"); },
                                   "huge.safetensors: header length 100000001 exceeds the format's limit of 100000000 bytes");
}

TEST(BadInputSafetensors, NumberBeyondDoublesRange) {
  // Found by fuzz_safetensors: nlohmann::json throws out_of_range, not parse_error, for such a number.
  const auto bytes = fx::testing::file_with_header(R"({"q":{"dtype":"U8","shape":[1],"data_offsets":[2e888,1]}})", {0});
  expect_refused<fx::FixtureError>([&] { fx::parse_safetensors(bytes, "overflow.safetensors"); },
                                   "overflow.safetensors: header is not valid JSON: .*number overflow parsing '2e888'");
}

TEST(BadInputSafetensors, ShapeWhoseByteSizeOverflows64Bits) {
  const auto bytes = fx::testing::file_with_header(
      R"({"q":{"dtype":"F64","shape":[4294967296,4294967296,2],"data_offsets":[0,0]}})", {});
  expect_refused<fx::FixtureError>([&] { fx::parse_safetensors(bytes, "big.safetensors"); },
                                   "tensor 'q': bad shape .*: its size in bytes overflows 64 bits");
}

TEST(BadInputSafetensors, OffsetsPast2To63) {
  const auto bytes = fx::testing::file_with_header(
      R"({"q":{"dtype":"U8","shape":[1],"data_offsets":[9223372036854775808,9223372036854775809]}})", {0});
  expect_refused<fx::FixtureError>([&] { fx::parse_safetensors(bytes, "far.safetensors"); },
                                   "tensor 'q': bad data_offsets .* is not a non-negative integer below 2\\^63");
}

// --- fixture validation: one row per corruption of bad_fixtures.h --------------------------------

class BadInputFixture : public ::testing::TestWithParam<larc::testing::BadFixture> {};

TEST_P(BadInputFixture, IsRefusedNamingTheField) {
  const larc::testing::BadFixture& row = GetParam();
  fx::SafetensorsFile f = larc::testing::good_fixture(scratch());
  ASSERT_NO_THROW(h::parse_fixture(f));
  row.corrupt(f);
  f.source = row.name + ".safetensors";
  expect_refused<fx::FixtureError>([&] { h::parse_fixture(f); }, larc::testing::refusal(row));
}

INSTANTIATE_TEST_SUITE_P(Rows, BadInputFixture, ::testing::ValuesIn(larc::testing::bad_fixtures()),
                         [](const auto& info) { return info.param.name; });

TEST(BadInputFixtureVersion, SameFormatFromAnotherLarcVersionIsRead) {
  // The format field decides: a fixture written by another larc in the same format reads as before.
  fx::SafetensorsFile f = larc::testing::good_fixture(scratch());
  f.metadata["larc_version"] = "0.0.1";
  EXPECT_EQ(h::parse_fixture(f).spec.shape, (h::Shape{1, 5, 1, 2, 2}));
}

// --- Shape::parse --------------------------------------------------------------------------------

TEST(BadInputShape, ParseNamesTheSizeBelowOne) {
  expect_refused([] { h::Shape::parse("1,0,1,1,1"); }, "^shape: T must be at least 1, got 0$");
  expect_refused([] { h::Shape::parse("1,4,1,-2,1"); }, "^shape: K must be at least 1, got -2$");
}

TEST(BadInputShape, ParseRefusesWhatIsNotFiveOrSixIntegers) {
  for (const char* text : {"", "1,2,3,4", "1,2,3,4,5,6,7", "a,b,c,d,e", "1,2,3,4,5.5", "1,,3,4,5", "1,2,3,4,99999999999999999999",
                           "1,2,3,4,5,", "1;2;3;4;5"}) {
    SCOPED_TRACE(text);
    expect_refused([&] { h::Shape::parse(text); },
                   "^shape: expected five positive integers B,T,H,K,V \\(or six, B,T,H,K,V,HV\\), got '");
  }
  // HV: a multiple of H, and only for a mechanism with grouped value heads.
  expect_refused([] { h::Shape::parse("1,2,3,4,5,7"); }, "^shape: HV must be a positive multiple of H = 3, got 7");
  EXPECT_EQ(h::Shape::parse("1,2,3,4,5,6").value_heads(), 6);
  EXPECT_EQ(h::Shape::parse("1,2,3,4,5,6").str(), "1,2,3,4,5,6");
  EXPECT_EQ(h::Shape::parse("1,2,3,4,5,3").str(), "1,2,3,4,5");
  expect_refused([] { h::find_mechanism("la").check_shape(h::Shape::parse("1,2,3,4,5,6")); },
                 "^shape 1,2,3,4,5,6: la has no grouped value heads \\(HV must equal H\\)");
}

// --- Mechanism::shape_of (the inputs of any caller: fixtures, kernels, judge) -----------------------

h::ValueMap gdn_inputs() {
  const h::Mechanism& m = h::find_mechanism("gdn");
  return m.generate({1, 6, 2, 3, 4}, 5, m.resolve_knobs({}));
}

TEST(BadInputShapeOf, MissingInput) {
  h::ValueMap in = gdn_inputs();
  in.erase("v");
  expect_refused([&] { h::find_mechanism("gdn").shape_of(in); }, "gdn: input 'v' is missing");
}

TEST(BadInputShapeOf, MismatchedShapes) {
  h::ValueMap in = gdn_inputs();
  in["v"] = larc::ref::Tensor<double>({1, 7, 2, 4});  // T = 7 where q has 6
  expect_refused([&] { h::find_mechanism("gdn").shape_of(in); }, "gdn: input 'v': expected shape \\[1, 6, W, V\\] \\(BTWV\\)");
}

TEST(BadInputShapeOf, ZeroLengthSequence) {
  h::ValueMap in = gdn_inputs();
  for (auto& [name, t] : in) {
    std::vector<std::int64_t> shape = t.shape;
    shape[1] = 0;
    t = larc::ref::Tensor<double>(shape);
  }
  expect_refused([&] { h::find_mechanism("gdn").shape_of(in); },
                 "gdn: input 'q': expected shape \\[1, T, H, K\\] \\(BTHK\\), got \\[1, 0, 2, 3\\]");
}

TEST(BadInputShapeOf, NaNInput) {
  h::ValueMap in = gdn_inputs();
  in["k"].data[4] = kNaN;
  expect_refused([&] { h::find_mechanism("gdn").shape_of(in); }, "gdn: input 'k' holds a non-finite value at flat index 4");
}

TEST(BadInputShapeOf, InfInput) {
  h::ValueMap in = gdn_inputs();
  in["q"].data[0] = kInf;
  expect_refused([&] { h::find_mechanism("gdn").shape_of(in); }, "gdn: input 'q' holds a non-finite value at flat index 0");
}

TEST(BadInputShapeOf, BetaAboveTwo) {
  h::ValueMap in = gdn_inputs();
  in["beta"].data[3] = 2.25;
  expect_refused([&] { h::find_mechanism("gdn").shape_of(in); }, "gdn: input 'beta' holds 2\\.25 at flat index 3, outside \\[0, 2\\]");
}

TEST(BadInputShapeOf, BetaBelowZeroDeltaNet) {
  const h::Mechanism& m = h::find_mechanism("deltanet");
  h::ValueMap in = m.generate({1, 6, 2, 3, 4}, 5, m.resolve_knobs({}));
  in["beta"].data[0] = -0.5;
  expect_refused([&] { m.shape_of(in); }, "deltanet: input 'beta' holds -0\\.5");
}

TEST(BadInputShapeOf, LogDecayAboveZero) {
  h::ValueMap in = gdn_inputs();
  in["g"].data[5] = 0.1;
  expect_refused([&] { h::find_mechanism("gdn").shape_of(in); }, "gdn: input 'g' holds 0\\.1 at flat index 5, outside \\[-inf, 0\\]");
}

TEST(BadInputShapeOf, PerChannelLogDecayAboveZeroGla) {
  const h::Mechanism& m = h::find_mechanism("gla");
  h::ValueMap in = m.generate({1, 4, 1, 3, 3}, 2, m.resolve_knobs({}));
  in["gk"].data[7] = 2;
  expect_refused([&] { m.shape_of(in); }, "gla: input 'gk' holds 2 at flat index 7, outside \\[-inf, 0\\]");
}

TEST(BadInputShapeOf, RelaxationGateAboveOneKla) {
  const h::Mechanism& m = h::find_mechanism("kla");
  h::ValueMap in = m.generate({1, 4, 1, 3, 3}, 2, m.resolve_knobs({}));
  in["eta"].data[1] = 3;
  expect_refused([&] { m.shape_of(in); }, "kla: input 'eta' holds 3 at flat index 1, outside \\[0, 1\\]");
}

TEST(BadInputShapeOf, WrongLevelCountLogLinear) {
  const h::Mechanism& m = h::find_mechanism("log-linear");
  h::ValueMap in = m.generate({1, 8, 1, 2, 2}, 2, m.resolve_knobs({}));
  in["level_scales"] = larc::ref::Tensor<double>({1, 8, 1, 3});  // T = 8 needs 4 levels
  expect_refused([&] { m.shape_of(in); },
                 "log-linear: the level dimension L must be at least ceil\\(log2 T\\) \\+ 1 = 4 for T = 8 \\(ceil\\(log2\\(t0 \\+ T\\)\\) \\+ 1 "
                 "after t0 earlier tokens\\), got 3");
}

// --- run_case / run_subject / judge_candidate --------------------------------------------------------

h::CaseSpec gdn_case(h::Shape s) {
  h::CaseSpec c;
  c.subject = "ref-serial-f32";
  c.mechanism = "gdn";
  c.dtype = Dtype::fp32;
  c.shape = s;
  return c;
}

TEST(BadInputRunCase, ZeroLength) {
  expect_refused([] { h::run_case(gdn_case({1, 0, 1, 2, 2})); }, "^shape: T must be at least 1, got 0$");
}

TEST(BadInputRunCase, ZeroHeadDimension) {
  expect_refused([] { h::run_case(gdn_case({1, 4, 1, 2, 0})); }, "^shape: V must be at least 1, got 0$");
}

TEST(BadInputRunCase, TensorPast32BitOffsets) {
  // 2 · 2^16 · 2^8 · 2^8 = 2^33 elements of q: refused before anything is allocated.
  expect_refused([] { h::run_case(gdn_case({2, 65536, 256, 256, 1})); },
                 "shape 2,65536,256,256,1: gdn tensor 'q' BTHK would hold more than 2\\^31 - 1 elements");
}

TEST(BadInputRunCase, KnobNaN) {
  h::CaseSpec c = gdn_case({1, 4, 1, 2, 2});
  c.knobs["decay_max"] = kNaN;
  expect_refused([&] { h::run_case(c); }, "knob 'decay_max': expected a value in \\[0\\.001.*, got nan");
}

TEST(BadInputRunCase, KnobBetaRangeAboveTwo) {
  h::CaseSpec c = gdn_case({1, 4, 1, 2, 2});
  c.knobs["beta_hi"] = 2.5;
  expect_refused([&] { h::run_case(c); }, "knob 'beta_hi': expected a value in \\[0, 2\\], got 2\\.5 \\(β");
}

// A prepared case whose input `name` has element 0 replaced by `value`.
h::PreparedCase prepared_with(const std::string& name, double value) {
  h::PreparedCase p = h::prepare_case(gdn_case({1, 4, 1, 2, 2}));
  larc::ref::Tensor<double> t = p.inputs.at(name).decode();
  t.data[0] = value;
  p.inputs.at(name) = h::TypedTensor::encode(Dtype::fp32, t);
  return p;
}

TEST(BadInputRunSubject, NaNInput) {
  const h::PreparedCase p = prepared_with("v", kNaN);
  expect_refused([&] { h::run_subject(p, h::find_subject("ref-serial-f32", "gdn")); },
                 "gdn: input 'v' holds a non-finite value at flat index 0");
}

TEST(BadInputRunSubject, InfInput) {
  const h::PreparedCase p = prepared_with("q", -kInf);
  expect_refused([&] { h::run_subject(p, h::find_subject("ref-chunked-f32", "gdn")); },
                 "gdn: input 'q' holds a non-finite value at flat index 0");
}

TEST(BadInputRunSubject, BetaOutOfRange) {
  const h::PreparedCase p = prepared_with("beta", 3);
  expect_refused([&] { h::run_subject(p, h::find_subject("ref-serial-f32", "gdn")); }, "gdn: input 'beta' holds 3 at flat index 0, outside \\[0, 2\\]");
}

// A gradient file must hold every gradient the mechanism has: the one missing is named.
TEST(BadInputJudgeCandidate, GradientFileMissingAGradient) {
  h::CaseSpec c;
  c.mechanism = "gdn-backward";
  c.shape = {1, 4, 1, 2, 2};
  const h::PreparedCase p = h::prepare_case(c);
  h::TensorMap candidate;
  for (const auto& [name, values] : p.oracle)
    if (name != "dbeta") candidate.emplace(name, h::TypedTensor::encode(Dtype::fp32, values));
  expect_refused([&] { h::judge_candidate(p, candidate); }, "candidate: tensor 'dbeta' is missing \\(gdn-backward has ∂L/∂beta\\)");
  candidate.emplace("dbeta", h::TypedTensor::encode(Dtype::fp32, p.oracle.at("dbeta")));
  EXPECT_TRUE(h::judge_candidate(p, candidate).pass);
}

TEST(BadInputRunSubject, InputsOfAnotherShapeThanTheCase) {
  h::PreparedCase p = h::prepare_case(gdn_case({1, 4, 1, 2, 2}));
  p.spec.shape.T = 5;
  expect_refused([&] { h::run_subject(p, h::find_subject("ref-serial-f32", "gdn")); },
                 "gdn: the inputs have shape 1,4,1,2,2, the case says 1,5,1,2,2");
}

TEST(BadInputComputeOracle, LogDecayAboveZero) {
  h::PreparedCase p = prepared_with("g", 0.75);
  expect_refused([&] { h::compute_oracle(p); }, "gdn: input 'g' holds 0\\.75");
}

TEST(BadInputJudgeCandidate, OutputOfTheWrongShape) {
  const h::PreparedCase p = h::prepare_case(gdn_case({1, 4, 1, 2, 2}));
  const h::TensorMap candidate{{"o", h::TypedTensor::encode(Dtype::fp32, larc::ref::Tensor<double>({1, 4, 1, 3}))}};
  expect_refused([&] { h::judge_candidate(p, candidate); }, "candidate: tensor 'o': expected shape \\[1, 4, 1, 2\\], got \\[1, 4, 1, 3\\]");
}

TEST(BadInputJudgeCandidate, NaNOutputIsAViolationNotASilentPass) {
  const h::PreparedCase p = h::prepare_case(gdn_case({1, 4, 1, 2, 2}));
  larc::ref::Tensor<double> o = p.oracle.at("o");
  o.data[3] = kNaN;
  const h::CaseResult r = h::judge_candidate(p, {{"o", h::TypedTensor::encode(Dtype::fp32, o)}});
  EXPECT_FALSE(r.pass);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_TRUE(std::regex_search(r.errors.front(), std::regex("^o: .*(nan|NaN|non-finite)"))) << r.errors.front();
}

// --- the fuzz campaign -------------------------------------------------------------------------------

TEST(BadInputCampaign, LargestShapePast32BitOffsets) {
  h::CampaignConfig cfg;
  cfg.mechanisms = {"gdn"};
  cfg.max_T = 99'999'999'999;
  expect_refused([&] { h::Campaign{cfg}; }, "gdn tensor 'q' BTHK would hold more than 2\\^31 - 1 elements");
}

nlohmann::json small_report(std::uint64_t seed, const h::Shard& shard) {
  h::CampaignConfig cfg;
  cfg.seed = seed;
  cfg.mechanisms = {"la"};
  cfg.max_T = 8, cfg.max_K = 4, cfg.max_V = 4;
  const h::Campaign campaign(cfg);
  h::RunLimits limits;
  limits.cases = 4;
  return h::campaign_report(h::campaign_json(cfg, {4, {}, false}), shard, h::run_campaign(campaign, shard, limits), "tree");
}

TEST(BadInputCampaign, MergeRefusesAnUnfinishedShard) {
  nlohmann::json a = small_report(1, {0, 2}), b = small_report(1, {1, 2});
  b["unfinished"] = "interrupted by SIGTERM";
  expect_refused([&] { h::merge_reports({a, b}, {"a.json", "b.json"}); },
                 "b.json: an unfinished run \\(\"interrupted by SIGTERM\"\\): finish it with larc fuzz --resume");
}

TEST(BadInputCampaign, ResumeRefusesAnotherCampaignOrShard) {
  const nlohmann::json a = small_report(1, {0, 1});
  expect_refused([&] { h::continue_report(a, small_report(2, {0, 1}), "a.json"); }, "a.json: a different campaign: seed \\(1 vs 2\\)");
  expect_refused([&] { h::continue_report(small_report(1, {0, 2}), small_report(1, {1, 2}), "s.json"); },
                 "s.json: shard 0/2, this run is shard 1/2");
  expect_refused([&] { h::continue_report(nlohmann::json::array(), a, "x.json"); }, "x.json: not a larc fuzz report");
}

}  // namespace
