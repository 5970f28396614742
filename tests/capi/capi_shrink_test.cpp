// larc_shrink from C: a failure shrunk by the fuzzer's shrinker while a C callback runs the kernel on
// each candidate. The kernel planted here is the oracle's o rounded to fp32 (which passes) with one
// defect that only shows at T >= 8: o at t = 7 is 1.5 times too large. So the smallest failing case
// is [1, 8, 1, 1, 1] with every knob at its default, whatever the case it starts from.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "larc/c/larc.h"

namespace {

using nlohmann::json;

constexpr std::int64_t kDefectAt = 7;  // the timestep the planted kernel gets wrong, when T > it

// What a callback is told through `user`: how the planted kernel behaves, and what it saw.
struct Planted {
  bool raise_when_one_head = false;  // a case with H = 1 "raises" (a verdict without outputs)
  int no_verdict_at_call = -1;       // the call that gives no verdict (NULL), or -1
  int calls = 0;
  std::string verdict;               // the last verdict, alive until the next call
};

// The verdict of a kernel that raised on a case: no outputs, the error.
json raised_verdict(const json& spec) {
  return {{"kernel", "planted"}, {"mechanism", spec["mechanism"]}, {"dtype", spec["dtype"]},
          {"shape", spec["shape"]},  {"seed", spec["seed"]},           {"knobs", spec["knobs"]},
          {"origin", spec["origin"]}, {"pass", false},                 {"deterministic", true},
          {"oracle_method", ""},      {"errors", {"the kernel raised on one head"}}, {"outputs", json::array()}};
}

// The planted kernel on a case spec, judged: the gate's result JSON (larc_shrink_judge).
const char* judge_planted(const char* spec_json, void* user) {
  auto& p = *static_cast<Planted*>(user);
  if (++p.calls == p.no_verdict_at_call) return nullptr;
  const json spec = json::parse(spec_json);
  larc_case* c = larc_case_prepare(spec_json);
  if (!c) return nullptr;
  larc_tensor oracle{};
  if (larc_case_tensor(c, "oracle.o", &oracle) != 0) {
    larc_case_free(c);
    return nullptr;
  }
  if (p.raise_when_one_head && oracle.shape[2] == 1) {
    larc_case_free(c);
    p.verdict = raised_verdict(spec).dump();
    return p.verdict.c_str();
  }
  // o is [B, T, H, V], row-major.
  const std::int64_t B = oracle.shape[0], T = oracle.shape[1], HV = oracle.shape[2] * oracle.shape[3];
  const auto* exact = static_cast<const double*>(oracle.data);
  std::vector<float> o(static_cast<std::size_t>(B * T * HV));
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = static_cast<float>(exact[i]);
  if (T > kDefectAt)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < HV; ++i) o[static_cast<std::size_t>((b * T + kDefectAt) * HV + i)] *= 1.5f;
  const larc_tensor out{"o", "fp32", oracle.ndim, oracle.shape, o.data(), o.size() * sizeof(float)};
  larc_result* r = larc_judge(c, &out, 1, R"({"kernel": "planted"})");
  larc_case_free(c);
  if (!r) return nullptr;
  char* j = larc_result_json(r);
  larc_result_free(r);
  if (!j) return nullptr;
  p.verdict = j;
  larc_string_free(j);
  return p.verdict.c_str();
}

// The planted kernel's verdict on a case, as larc_shrink takes it.
std::string verdict_on(const json& spec, Planted& p) {
  const char* v = judge_planted(spec.dump().c_str(), &p);
  EXPECT_NE(v, nullptr) << larc_last_error();
  return v ? v : "";
}

// larc_shrink's answer, parsed; fails the test with larc's message when it refused.
json shrink(const std::string& failing, const char* options, Planted& p) {
  char* out = larc_shrink(failing.c_str(), options, judge_planted, &p);
  EXPECT_NE(out, nullptr) << larc_last_error();
  if (!out) return json::object();
  json j = json::parse(out);
  larc_string_free(out);
  return j;
}

const json kStart = {{"mechanism", "gdn"}, {"dtype", "fp32"}, {"shape", "2,100,2,16,16"}, {"seed", 3},
                     {"knobs", {{"initial_state", 2}, {"decay_max", 0.05}}}};

json default_knobs_of_gdn() {
  larc_case* c = larc_case_prepare(R"({"mechanism": "gdn", "dtype": "fp32", "shape": "1,1,1,1,1"})");
  char* info = larc_case_json(c);
  json knobs = json::parse(info)["knobs"];
  larc_string_free(info);
  larc_case_free(c);
  return knobs;
}

TEST(CapiShrink, PlantedDefectShrinksToTheShortestFailingCase) {
  Planted p;
  const std::string failing = verdict_on(kStart, p);
  ASSERT_FALSE(json::parse(failing)["pass"].get<bool>()) << failing;
  p.calls = 0;
  const json out = shrink(failing, nullptr, p);
  ASSERT_FALSE(out["path"].empty());
  const json& shrunk = out["path"].back();
  EXPECT_EQ(shrunk["shape"], "1,8,1,1,1");
  EXPECT_EQ(shrunk["seed"], 3);
  EXPECT_EQ(shrunk["knobs"], default_knobs_of_gdn()) << "the initial state and decay_max back at their defaults";
  EXPECT_EQ(out["evaluations"], p.calls) << "one callback per candidate";
  // Each step is smaller than the one before: the path starts with T halved (T -> 1 passes).
  EXPECT_EQ(out["path"][0]["shape"], "2,50,2,16,16");
  // The shrunk case fails on its own; one timestep shorter passes.
  EXPECT_FALSE(json::parse(verdict_on(shrunk, p))["pass"].get<bool>());
  json shorter = shrunk;
  shorter["shape"] = "1,7,1,1,1";
  EXPECT_TRUE(json::parse(verdict_on(shorter, p))["pass"].get<bool>());
}

TEST(CapiShrink, KeepsTheFailureKindAndTheKernelsLimits) {
  // A kernel that raises on one head fails such candidates with another kind ("exception"): they are
  // not taken, so H stays 2.
  Planted raising;
  raising.raise_when_one_head = true;
  const std::string failing = verdict_on(kStart, raising);
  EXPECT_EQ(shrink(failing, nullptr, raising)["path"].back()["shape"], "1,8,2,1,1");
  // Head dimensions the kernel does not take are never tried.
  Planted p;
  EXPECT_EQ(shrink(failing, R"({"limits": {"head_dims": [16]}})", p)["path"].back()["shape"], "1,8,1,16,16");
  // At most max_evaluations candidates are judged.
  p.calls = 0;
  const json none = shrink(failing, R"({"max_evaluations": 0})", p);
  EXPECT_TRUE(none["path"].empty());
  EXPECT_EQ(none["evaluations"], 0);
  EXPECT_EQ(p.calls, 0);
}

TEST(CapiShrink, HonestKernelIsNeverShrunk) {
  Planted p;
  json passing_spec = kStart;
  passing_spec["shape"] = "2,7,2,16,16";  // shorter than the defect
  const std::string passing = verdict_on(passing_spec, p);
  ASSERT_TRUE(json::parse(passing)["pass"].get<bool>()) << passing;
  p.calls = 0;
  EXPECT_EQ(larc_shrink(passing.c_str(), nullptr, judge_planted, &p), nullptr);
  EXPECT_STREQ(larc_last_error(), "failing: the case passes; only a failure is shrunk");
  EXPECT_EQ(p.calls, 0);
}

TEST(CapiShrink, CallbackWithoutAVerdictStopsTheShrinkNamingTheCandidate) {
  Planted p;
  const std::string failing = verdict_on(kStart, p);
  p.calls = 0;
  p.no_verdict_at_call = 3;
  EXPECT_EQ(larc_shrink(failing.c_str(), nullptr, judge_planted, &p), nullptr);
  const std::string error = larc_last_error();
  EXPECT_NE(error.find("judge: the callback gave no verdict on the candidate {"), std::string::npos) << error;
  EXPECT_NE(error.find("shrinking stopped there"), std::string::npos) << error;
  EXPECT_EQ(p.calls, 3);
}

TEST(CapiShrink, BadArgumentsAreRefusedNamingThem) {
  Planted p;
  const std::string failing = verdict_on(kStart, p);
  auto refused = [&](const char* failing_json, const char* options, larc_shrink_judge judge) {
    EXPECT_EQ(larc_shrink(failing_json, options, judge, &p), nullptr);
    return std::string(larc_last_error());
  };
  EXPECT_EQ(refused(failing.c_str(), nullptr, nullptr), "judge: NULL");
  EXPECT_EQ(refused(nullptr, nullptr, judge_planted), "failing: NULL");
  EXPECT_EQ(refused("{\"pass\": false}", nullptr, judge_planted).rfind("failing: not a result JSON (", 0), 0u);
  EXPECT_EQ(refused(failing.c_str(), R"({"max_evals": 3})", judge_planted), "options: unknown key 'max_evals'");
  EXPECT_EQ(refused(failing.c_str(), R"({"max_evaluations": -1})", judge_planted),
            "options: max_evaluations must be an integer of at least 0");
  EXPECT_EQ(refused(failing.c_str(), R"({"limits": {"max_X": 3}})", judge_planted), "limits: unknown key 'max_X'");
}

}  // namespace
