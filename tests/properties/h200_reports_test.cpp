// The committed H200 reports are tied to the source they were made from: report_freshness refuses a
// report of another tree, of an uncommitted tree or without a hash; VLA-C10's verdict is judged from
// the measured timings by a function that these synthetic reports exercise in each direction, and
// KLA-C6 quotes measured KLA/GDN time ratios paired row by row.
#include <gtest/gtest.h>

#include <cmath>

#include "larc/harness/gate.h"
#include "larc/properties/vla_kernel_speed.h"

namespace {

using larc::props::Verdict;
using nlohmann::json;

const std::string kHash = "0123456789abcdef0123456789abcdef01234567";

TEST(ReportFreshness, OnlyAReportOfTheCurrentCommittedTreeIsCurrent) {
  EXPECT_TRUE(larc::harness::report_freshness(json{{"tree_hash", kHash}}, kHash).current);
  const auto stale = larc::harness::report_freshness(json{{"tree_hash", kHash}}, std::string(40, 'f'));
  EXPECT_FALSE(stale.current);
  EXPECT_NE(stale.message.find("stale"), std::string::npos) << stale.message;
  EXPECT_FALSE(larc::harness::report_freshness(json{{"rows", json::array()}}, kHash).current);
  EXPECT_FALSE(larc::harness::report_freshness(json{{"tree_hash", kHash + "-dirty"}}, kHash).current);
  EXPECT_FALSE(larc::harness::report_freshness(json{{"tree_hash", kHash}}, kHash + "-dirty").current);
  EXPECT_FALSE(larc::harness::report_freshness(json{{"tree_hash", "unknown"}}, kHash).current);
}

// Kernel time a·T^p against a causal softmax attention time c·T².
json bench_with(double kernel_power, double kernel_scale, double speedup) {
  json k, s;
  for (int p = 10; p <= 17; ++p) {
    const double T = std::ldexp(1.0, p);
    k[std::to_string(static_cast<long>(T))] = kernel_scale * std::pow(T, kernel_power);
    s[std::to_string(static_cast<long>(T))] = 1e-8 * T * T;
  }
  return {{"tree_hash", kHash},
          {"vla_c10",
           {{"kernel_ms", k},
            {"sdpa_ms", s},
            {"crossover_T", 40000.0},
            {"speedup_over_sequential", speedup},
            {"sequential_pytorch", {{"T", 2048}, {"ms", 100.0}}}}}};
}

TEST(VlaKernelSpeed, LinearFastAndCrossingSoftmaxHolds) {
  const auto o = larc::props::judge_vla_kernel_speed(bench_with(1.0, 4e-4, 30));
  EXPECT_EQ(o.verdict, Verdict::holds) << o.evidence;
  EXPECT_NE(o.evidence.find("T^1"), std::string::npos) << o.evidence;
}

TEST(VlaKernelSpeed, QuadraticTimeIsNotOT) {
  const auto o = larc::props::judge_vla_kernel_speed(bench_with(2.0, 1e-9, 30));
  EXPECT_EQ(o.verdict, Verdict::not_checkable_here);
  EXPECT_NE(o.evidence.find("O(T): no"), std::string::npos) << o.evidence;
}

TEST(VlaKernelSpeed, NeverBelowSoftmaxOrSlowerThanFourteenTimesIsNotReached) {
  EXPECT_EQ(larc::props::judge_vla_kernel_speed(bench_with(1.0, 1.0, 30)).verdict, Verdict::not_checkable_here);
  EXPECT_EQ(larc::props::judge_vla_kernel_speed(bench_with(1.0, 4e-4, 3)).verdict, Verdict::not_checkable_here);
}

TEST(VlaKernelSpeed, AMissingOrMalformedReportIsSaidSo) {
  EXPECT_NE(larc::props::judge_vla_kernel_speed(json::object()).evidence.find("no measured"), std::string::npos);
  json bad = bench_with(1.0, 4e-4, 30);
  bad["vla_c10"].erase("sdpa_ms");
  const auto o = larc::props::judge_vla_kernel_speed(bad);
  EXPECT_EQ(o.verdict, Verdict::not_checkable_here);
  EXPECT_NE(o.evidence.find("malformed"), std::string::npos) << o.evidence;
}

json row(const std::string& kernel, const std::string& kind, double T, double B, double ms) {
  return {{"kernel", kernel}, {"kind", kind}, {"T", T}, {"B", B}, {"H", kind == "decode" ? 1.0 : 16.0},
          {"D", 128.0}, {"dtype", "bf16"}, {"ms", ms}};
}

TEST(MeasuredTimeRatios, PairsRowsOfTheSameShapeOnly) {
  const json report{{"tree_hash", kHash},
                    {"rows", {row("kla", "prefill", 2048, 1, 1.2), row("gdn", "prefill", 2048, 1, 1.0),
                              row("kla", "prefill", 8192, 1, 5.0), row("gdn", "decode", 1, 132, 0.01),
                              row("kla", "decode", 1, 132, 0.015)}}};
  const std::string s = larc::props::measured_time_ratios(report, "kla", "gdn");
  EXPECT_NE(s.find("prefill T = 2048: 1.2"), std::string::npos) << s;
  EXPECT_NE(s.find("decode B×H = 132: 1.5"), std::string::npos) << s;
  EXPECT_EQ(s.find("8192"), std::string::npos) << s;  // no GDN row of that shape
  EXPECT_NE(s.find(kHash), std::string::npos) << s;
  EXPECT_EQ(larc::props::measured_time_ratios(report, "kla", "vla"), "");
  EXPECT_EQ(larc::props::measured_time_ratios(json(nullptr), "kla", "gdn"), "");
}

// The device tool lends an H100 when no H200 starts: the evidence names the card the report was measured on.
TEST(MeasuredTimeRatios, NameTheCardTheReportWasMeasuredOn) {
  json report{{"tree_hash", kHash},
              {"rows", {row("kla", "prefill", 2048, 1, 1.2), row("gdn", "prefill", 2048, 1, 1.0)}}};
  const std::string unnamed = larc::props::measured_time_ratios(report, "kla", "gdn");
  EXPECT_NE(unnamed.find("time on an unnamed GPU ("), std::string::npos) << unnamed;
  report["device"] = "NVIDIA H100 80GB HBM3";
  const std::string s = larc::props::measured_time_ratios(report, "kla", "gdn");
  EXPECT_NE(s.find("time on the NVIDIA H100 80GB HBM3 (reports/h200/bench.json"), std::string::npos) << s;
  json vla = bench_with(1.0, 4e-4, 30);
  vla["device"] = "NVIDIA H200";
  const auto o = larc::props::judge_vla_kernel_speed(vla);
  EXPECT_NE(o.evidence.find("measured on the NVIDIA H200 (reports/h200/bench.json"), std::string::npos) << o.evidence;
}

}  // namespace
