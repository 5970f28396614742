// The io grade's baselines of the families with a chunked form besides the delta rule (docs/gate.md
// "Precision grades", docs/io-grade-operands.md): GLA, linear attention (plain and ratio), log-linear
// (Mamba-2 and GDN), second-order HLA (plain and normalised), AHLA, VLA and CCQ (GLA and GDN backbones).
//
//   (a) With OperandFormat::none a chunked form is bitwise the form called without operands.
//   (b) Every operand is rounded: in double, a perturbation of q, k and v far below bf16's resolution
//       (relative 2^-36) changes the none form's outputs but leaves the bf16 form's bitwise unchanged,
//       which holds only if every value derived from q, k or v is rounded before it enters a product
//       (an unrounded operand lets the perturbation through). VLA's ratio read divides by ζ^T φ(q_t),
//       which its chunked form evaluates per token in S (no product), so VLA is checked with the plain
//       read.
//   (c) Each mechanism's compute_io at OperandFormat::none is bitwise its float chunked form (for the
//       delta rule's raw-key mechanisms too, whose io baseline also stores q̂, k̂ in the input dtype).
//   (d) On bf16 inputs, compute_io with bf16 operands is of bf16-intermediate grade against the float64
//       serial form: relative error between 1e-4 and 3e-2, and at least 10× the float chunked form's
//       (except outputs computed from the inputs alone, which rounding leaves at fp32 grade).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "larc/harness/mechanism.h"
#include "larc/reference/ccq.h"
#include "larc/reference/gla.h"
#include "larc/reference/hla.h"
#include "larc/reference/linear_attention.h"
#include "larc/reference/log_linear.h"
#include "larc/reference/low_precision.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/vla_chunked.h"

using namespace larc::ref;
namespace hn = larc::harness;

namespace {

constexpr Eigen::Index kT = 45, kDk = 8, kDv = 6, kChunk = 16;

// Uniform entries in [lo, hi] from a seeded generator.
class Inputs {
 public:
  explicit Inputs(std::uint64_t seed) : rng_(seed) {}
  template <class S>
  Mat<S> matrix(Eigen::Index rows, Eigen::Index cols, double lo = -1, double hi = 1) {
    std::uniform_real_distribution<double> d(lo, hi);
    Mat<S> m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = S(d(rng_));
    return m;
  }
  template <class S>
  Vec<S> vector(Eigen::Index n, double lo, double hi) { return matrix<S>(n, 1, lo, hi).col(0); }

 private:
  std::mt19937_64 rng_;
};

// q, k, v of one problem, each entry optionally scaled by 1 + 2^-36 r, r ∈ [−1, 1] (a fixed draw).
template <class S>
struct Qkv {
  Mat<S> q, k, v;
};
template <class S>
Qkv<S> qkv(bool perturbed, double lo = -1, double hi = 1) {
  Inputs in(11);
  Qkv<S> x{in.matrix<S>(kT, kDk, lo, hi), in.matrix<S>(kT, kDk, lo, hi), in.matrix<S>(kT, kDv, lo, hi)};
  if (perturbed) {
    Inputs noise(12);
    for (Mat<S>* m : {&x.q, &x.k, &x.v}) *m = m->cwiseProduct(Mat<S>(Mat<S>::Ones(m->rows(), m->cols()) +
                                                                     std::ldexp(1.0, -36) * noise.matrix<S>(m->rows(), m->cols())));
  }
  return x;
}

// One family's chunked form: every output of the problem built from qkv(perturbed), with `ops`.
using Outputs = std::vector<Mat<double>>;
using ChunkedForm = std::function<Outputs(bool perturbed, const MatmulOperands<double>& ops)>;

struct Family {
  std::string name;
  ChunkedForm run;
};

std::vector<Family> families() {
  std::vector<Family> f;
  f.push_back({"gla", [](bool perturbed, const MatmulOperands<double>& ops) {
                 const Qkv<double> x = qkv<double>(perturbed);
                 gla::Problem<double> p{x.q, x.k, x.v, Inputs(5).matrix<double>(kT, kDk, 0.5, 1), 0.35, {}};
                 const SeqResult<double> r = gla::chunked(p, kChunk, ops);
                 return Outputs{r.o, r.final_state};
               }});
  for (bool ratio : {false, true})
    f.push_back({ratio ? "la-ratio" : "la", [ratio](bool perturbed, const MatmulOperands<double>& ops) {
                   const Qkv<double> x = qkv<double>(perturbed);
                   linear_attention::Problem<double> p{x.q, x.k, x.v, {}, {}, {}};
                   p.opt.ratio = ratio;
                   p.opt.feature = ratio ? linear_attention::FeatureMap::elu_plus_one : linear_attention::FeatureMap::identity;
                   p.opt.eps = 1e-6;
                   p.opt.scale = 0.35;
                   const linear_attention::Result<double> r = linear_attention::chunked(p, kChunk, ops);
                   return Outputs{r.o, r.final_memory.s, Mat<double>(r.final_memory.z)};
                 }});
  for (log_linear::Variant variant : {log_linear::Variant::mamba2, log_linear::Variant::gdn})
    f.push_back({std::string("log-linear-") + log_linear::variant_name(variant),
                 [variant](bool perturbed, const MatmulOperands<double>& ops) {
                   const Qkv<double> x = qkv<double>(perturbed);
                   Inputs in(6);
                   log_linear::Problem<double> p{variant, x.q, x.k / std::sqrt(double(kDk)), x.v, in.vector<double>(kT, 0.8, 1),
                                                 in.vector<double>(kT, 0.05, 1), in.matrix<double>(kT, 7, 0, 2), 1.0, std::nullopt};
                   return Outputs{log_linear::chunked(p, kChunk, ops)};
                 }});
  for (bool normalized : {false, true})
    f.push_back({normalized ? "hla-normalized" : "hla", [normalized](bool perturbed, const MatmulOperands<double>& ops) {
                   const Qkv<double> x = qkv<double>(perturbed, normalized ? 0.0 : -1.0, 1.0);
                   hla::Problem<double> p{x.q, x.k, x.v, {}};
                   p.opt.normalized = normalized;
                   p.opt.eps = 1e-6;
                   p.opt.gamma = 0.95;
                   const hla::Result<double> r = hla::second_chunked(p, kChunk, ops);
                   return Outputs{r.o, Mat<double>(r.den)};
                 }});
  f.push_back({"ahla", [](bool perturbed, const MatmulOperands<double>& ops) {
                 const Qkv<double> x = qkv<double>(perturbed);
                 hla::Problem<double> p{x.q, x.k, x.v, {}};
                 p.opt.gamma = 0.95;
                 return Outputs{hla::ahla_chunked(p, kChunk, ops).o};
               }});
  f.push_back({"vla-plain-read", [](bool perturbed, const MatmulOperands<double>& ops) {
                 const Qkv<double> x = qkv<double>(perturbed);
                 vla::Problem<double> p{x.q, x.k, x.v, {}, {}, {}};
                 p.u = vla::authors_penalty_directions<double>(p.k, Mat<double>::Identity(kDk, kDk));
                 p.opt.ratio = false;
                 const vla::Result<double> r = vla::chunked(p, kChunk, ops);
                 return Outputs{r.o, r.final_memory.s, r.final_memory.a};
               }});
  f.push_back({"ccq-gdn", [](bool perturbed, const MatmulOperands<double>& ops) {
                 const Qkv<double> x = qkv<double>(perturbed);
                 Inputs in(7);
                 ccq::GdnProblem<double> p{{x.q, x.k / std::sqrt(double(kDk)), x.v, in.vector<double>(kT, 0.8, 1),
                                            in.vector<double>(kT, 0.05, 1), 0.35, {}},
                                           {},
                                           {}};
                 p.opt.lambda = in.vector<double>(kT, 0, 1);
                 p.opt.covariance = ccq::Covariance::decayed;
                 const ccq::Result<double> r = ccq::chunked(p, kChunk, ops);
                 return Outputs{r.o, r.final_state, r.final_stats.c, Mat<double>(r.final_stats.m)};
               }});
  f.push_back({"ccq-gla", [](bool perturbed, const MatmulOperands<double>& ops) {
                 const Qkv<double> x = qkv<double>(perturbed);
                 Inputs in(8);
                 ccq::GlaProblem<double> p{{x.q, x.k, x.v, in.matrix<double>(kT, kDk, 0.5, 1), 0.35, {}}, {}, {}};
                 p.opt.lambda = in.vector<double>(kT, 0, 1);
                 const ccq::Result<double> r = ccq::chunked(p, kChunk, ops);
                 return Outputs{r.o, r.final_state, r.final_stats.c, Mat<double>(r.final_stats.m)};
               }});
  return f;
}

bool bitwise_equal(const Outputs& a, const Outputs& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].rows() != b[i].rows() || a[i].cols() != b[i].cols() || a[i] != b[i]) return false;
  return true;
}

TEST(IoOperands, NoneIsTheFormWithoutOperands) {
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    EXPECT_TRUE(bitwise_equal(f.run(false, MatmulOperands<double>(OperandFormat::none)), f.run(false, {})));
  }
}

TEST(IoOperands, EveryOperandIsRoundedSoSubUlpPerturbationsVanish) {
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    EXPECT_FALSE(bitwise_equal(f.run(false, {}), f.run(true, {}))) << "the perturbation must reach the none form's outputs";
    const MatmulOperands<double> bf16(OperandFormat::bf16);
    const Outputs rounded = f.run(false, bf16);
    EXPECT_TRUE(bitwise_equal(rounded, f.run(true, bf16))) << "a value derived from q, k or v enters a product unrounded";
    EXPECT_FALSE(bitwise_equal(rounded, f.run(false, {}))) << "bf16 operands must change the outputs";
  }
}

const char* const kMechanisms[] = {"gla", "la", "la-ratio", "log-linear", "log-linear-gdn", "hla", "hla-normalized", "ahla",
                                   "vla", "ccq-gla", "ccq-gdn", "gdn-qk-l2norm", "deltanet-qk-l2norm"};

hn::ValueMap bf16_inputs(const hn::Mechanism& m, const hn::Shape& s) {
  hn::ValueMap in = m.generate(s, 3, m.resolve_knobs({}));
  for (auto& [name, t] : in)
    for (double& x : t.data) x = round_to(Dtype::bf16, x);
  return in;
}

TEST(IoOperands, ComputeIoAtNoneIsTheFloatChunkedForm) {
  const hn::Shape s{1, 100, 2, 16, 16};
  for (const char* name : kMechanisms) {
    SCOPED_TRACE(name);
    const hn::Mechanism& m = hn::find_mechanism(name);
    ASSERT_TRUE(m.compute_io);
    const hn::ValueMap in = bf16_inputs(m, s);
    const hn::ValueMap io = m.compute_io(in, OperandFormat::none, 64);
    const hn::ValueMap chunked = m.compute(in, hn::Precision::f32, Form::chunked, 64);
    ASSERT_EQ(io.size(), chunked.size());
    for (const auto& [out, t] : chunked) EXPECT_EQ(io.at(out).data, t.data) << out;
  }
}

double relative_error(const Tensor<double>& x, const Tensor<double>& exact) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < exact.data.size(); ++i) {
    err += (x.data[i] - exact.data[i]) * (x.data[i] - exact.data[i]);
    norm += exact.data[i] * exact.data[i];
  }
  return std::sqrt(err / norm);
}

// Outputs whose every product reads only the inputs themselves (already bf16): plain LA's state Σ k vᵀ
// and CCQ's key statistics Σ k kᵀ, Σ k. Rounding their operands changes nothing, so they stay at fp32 grade.
bool products_of_inputs_only(const std::string& mechanism, const std::string& output) {
  if (mechanism == "la") return output == "final_state";
  if (mechanism.starts_with("ccq-")) return output == "final_key_gram" || output == "final_key_sum";
  return false;
}

TEST(IoOperands, Bf16OperandsGiveBf16IntermediateGrade) {
  const hn::Shape s{1, 256, 2, 32, 32};
  for (const char* name : kMechanisms) {
    SCOPED_TRACE(name);
    const hn::Mechanism& m = hn::find_mechanism(name);
    const hn::ValueMap in = bf16_inputs(m, s);
    const hn::ValueMap exact = m.compute(in, hn::Precision::f64, Form::serial, 64);
    const hn::ValueMap io = m.compute_io(in, OperandFormat::bf16, 64);
    const hn::ValueMap chunked = m.compute(in, hn::Precision::f32, Form::chunked, 64);
    for (const auto& [out, t] : exact) {
      const double io_err = relative_error(io.at(out), t), f32_err = relative_error(chunked.at(out), t);
      if (products_of_inputs_only(name, out)) {
        EXPECT_LE(io_err, 1e-6) << out;
        continue;
      }
      EXPECT_GE(io_err, 1e-4) << out;
      EXPECT_LE(io_err, 3e-2) << out;
      EXPECT_GE(io_err, 10 * f32_err) << out;
    }
  }
}

}  // namespace
