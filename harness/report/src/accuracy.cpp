#include "accuracy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#include "larc/cases/fla_tensors.h"
#include "larc/cases/rng.h"
#include "larc/harness/gate.h"
#include "larc/reference/chunk_local_decay_gradient.h"

namespace larc::report {

namespace {
namespace h = larc::harness;
namespace cases = larc::cases;
using h::Dtype;

// The chunk of the chunked CPU subject ref-chunked-f32 (FLA's; harness/src/reference_subjects.h).
constexpr std::int64_t kChunk = 64;
const std::vector<Dtype> kDtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};

struct Grid {
  std::vector<std::int64_t> lengths;
  std::vector<int> seeds;           // per length
  std::int64_t K = 32, V = 32;
  std::size_t strip = 0;            // per-timestep errors kept at lengths[strip] (first seed, fp32)
  std::int64_t float128_max_T = 1024;  // the float128 rung is computed up to this T (fp32 inputs)
};

Grid grid_for(const ReportContext& ctx) {
  if (ctx.small) return {{16, 64}, {1, 1}, 4, 4, 1, 64};
  return {{64, 256, 1024, 4096, 16384}, {3, 3, 3, 3, 2}, 32, 32, 2, 1024};
}

// Per slice ‖y_t − o_t‖₂ / ‖o_t‖₂ (0/0 = 0; a nonzero error on a zero slice is infinite); slices as
// h::slice_norms cuts them (per timestep of `axis`, or per coordinate of the first `leading_axes`).
std::vector<double> relative_errors(const ref::Tensor<double>& y, const ref::Tensor<double>& o, int axis,
                                    const std::vector<double>& norms, int leading_axes = 0) {
  ref::Tensor<double> d = y;
  for (std::size_t i = 0; i < d.data.size(); ++i) d.data[i] -= o.data[i];
  std::vector<double> e = h::slice_norms(d, axis, leading_axes);
  for (std::size_t t = 0; t < e.size(); ++t)
    e[t] = norms[t] > 0 ? e[t] / norms[t] : e[t] > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return e;
}

double max_of(const std::vector<double>& x) { return x.empty() ? 0.0 : *std::max_element(x.begin(), x.end()); }

// ‖y − o‖_F / ‖o‖_F from the per-slice relative errors and the slice norms.
double relative_rms(const std::vector<double>& rel, const std::vector<double>& norms) {
  double num = 0, den = 0;
  for (std::size_t t = 0; t < rel.size(); ++t) num += rel[t] * rel[t] * norms[t] * norms[t], den += norms[t] * norms[t];
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

struct FormRow {
  std::string source, kernel, mechanism, form, dtype;
  std::int64_t T = 0;
  std::uint64_t seed = 0;
  double max_rel_err = 0, rel_rms = 0;
};

struct RungRow {
  std::string mechanism, dtype;
  std::int64_t T = 0;
  std::uint64_t seed = 0;
  double double_vs_dd = 0, float128_vs_dd = std::numeric_limits<double>::quiet_NaN(), margin = 0;
};

struct StripRow {
  std::string mechanism, form;
  std::vector<double> rel;
};

struct GridData {
  std::vector<FormRow> forms;
  std::vector<RungRow> rungs;
  std::vector<StripRow> strips;
};

// The report's cases: one sequence of T tokens, one head, K and V, at the mechanism's default knobs.
h::CaseSpec one_head_case(const h::Mechanism& m, std::int64_t T, std::int64_t K, std::int64_t V, std::uint64_t seed,
                          Dtype dtype) {
  h::CaseSpec spec;
  spec.mechanism = m.name;
  spec.dtype = dtype;
  spec.shape = {1, T, 1, K, V};
  spec.seed = seed;
  return spec;
}

// One case: inputs, oracle and estimate as the gate prepares them, every CPU form of the mechanism,
// the rungs' differences.
void run_case(const Grid& g, const h::Mechanism& m, std::int64_t T, std::uint64_t seed, Dtype dtype, bool keep_strip,
              GridData& data) {
  const h::CaseSpec spec = one_head_case(m, T, g.K, g.V, seed, dtype);
  const h::PreparedCase p = h::prepare_case(spec);
  const int axis = m.time_axis("o");
  const ref::Tensor<double>& oracle = p.oracle.at("o");
  const std::vector<double> norms = h::slice_norms(oracle, axis);
  const std::string dtype_name(ref::dtype_name(dtype));
  for (ref::Form form : m.forms) {
    if (form == ref::Form::materialized) continue;  // the O(T²) definition, not a kernel's form (as the gate)
    const h::Subject& s = h::find_subject("ref-" + std::string(ref::form_name(form)) + "-f32", m.name);
    h::TensorMap out = h::poisoned_outputs(m, spec.shape, dtype);
    s.launch(p.inputs, out);
    const std::vector<double> rel = relative_errors(out.at("o").decode(), oracle, axis, norms);
    data.forms.push_back({"cpu", s.name, m.name, ref::form_name(form), dtype_name, T, seed, max_of(rel), relative_rms(rel, norms)});
    if (keep_strip && (form == ref::Form::serial || form == ref::Form::chunked)) data.strips.push_back({m.name, ref::form_name(form), rel});
  }
  RungRow r{m.name, dtype_name, T, seed};
  const h::ValueMap inputs = h::decode_all(p.inputs);
  r.double_vs_dd = max_of(relative_errors(m.compute(inputs, h::Precision::f64, ref::Form::serial, 0).at("o"), oracle, axis, norms));
  if (dtype == Dtype::fp32 && T <= g.float128_max_T)
    r.float128_vs_dd = max_of(relative_errors(m.compute(inputs, h::Precision::f128, ref::Form::serial, 0).at("o"), oracle, axis, norms));
  // The gate's estimate must lie 1000× below the tolerance, which is at least u_D‖o_t‖ (its floor).
  const std::vector<double>& estimate = p.oracle_error.at("o");
  r.margin = std::numeric_limits<double>::infinity();
  for (std::size_t t = 0; t < estimate.size(); ++t)
    if (estimate[t] > 0) r.margin = std::min(r.margin, ref::dtype_unit_roundoff(dtype) * norms[t] / estimate[t]);
  data.rungs.push_back(r);
}

GridData compute_grid(const ReportContext& ctx, const Grid& g) {
  GridData data;
  for (const h::Mechanism& m : h::mechanisms()) {
    if (m.computes_gradients()) continue;  // the report's figures are of the forward output o
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < g.lengths.size(); ++i)
      for (int s = 0; s < g.seeds[i]; ++s)
        for (Dtype d : kDtypes)
          run_case(g, m, g.lengths[i], ctx.seed + static_cast<std::uint64_t>(s), d,
                   i == g.strip && s == 0 && d == Dtype::fp32, data);
    std::cerr << "larc report: accuracy grid: " << m.name << " ("
              << num(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) << " s)\n";
  }
  return data;
}

void add_h200_rows(const H200Gate& h200, GridData& data) {
  for (const nlohmann::json& r : h200.results) {
    const auto kernel = r.at("kernel").get<std::string>();
    if (kernel.rfind("ref-", 0) == 0) continue;  // the reference's CPU subjects are drawn from this grid
    const h::Shape shape = h::Shape::parse(r.at("shape").get<std::string>());
    data.forms.push_back({"h200", kernel, r.at("mechanism").get<std::string>(), "gpu kernel",
                          r.at("dtype").get<std::string>(), shape.T, r.at("seed").get<std::uint64_t>(),
                          r.at("max_rel_err").get<double>(), r.at("rel_rms").get<double>()});
  }
}

std::string seeds_text(const Grid& g) {
  std::string s;
  for (std::size_t i = 0; i < g.lengths.size(); ++i)
    s += (i ? ", " : "") + std::to_string(g.seeds[i]) + " at T = " + std::to_string(g.lengths[i]);
  return s;
}

std::string grid_text(const ReportContext& ctx, const Grid& g) {
  return "Every mechanism in the gate's registry (`larc gate --list`), inputs from its generator at default knobs "
         "(the gate's seeds " + std::to_string(ctx.seed) + ", " + std::to_string(ctx.seed + 1) + ", …), one head: "
         "B = H = 1, K = " + std::to_string(g.K) + ", V = " + std::to_string(g.V) + "; seeds per length: " +
         seeds_text(g) + ".";
}

// The largest figure of `rows` matching `keep`, described.
template <class Keep>
const FormRow* worst(const std::vector<FormRow>& rows, Keep keep) {
  const FormRow* w = nullptr;
  for (const FormRow& r : rows)
    if (keep(r) && (!w || r.max_rel_err > w->max_rel_err)) w = &r;
  return w;
}

Section error_vs_length_section(const ReportContext& ctx, const Grid& g, const GridData& data, const H200Gate& h200) {
  Csv csv("source,kernel,mechanism,form,dtype,T,seed,max_rel_err,rel_rms,unit_roundoff");
  for (const FormRow& r : data.forms)
    csv.cell(r.source).cell(r.kernel).cell(r.mechanism).cell(r.form).cell(r.dtype).cell(r.T)
        .cell(static_cast<std::int64_t>(r.seed)).cell(r.max_rel_err).cell(r.rel_rms)
        .cell(ref::dtype_unit_roundoff(h::parse_dtype(r.dtype))).end_row();
  write_data(ctx, "error_vs_T.csv", csv.text());
  Section s;
  s.figures = {{"error_vs_T", {"error_vs_T.csv"}}};
  std::ostringstream md;
  md << "## 1. Error against the oracle versus T\n\n"
     << figure_markdown(ctx, s.figures[0], "relative error versus T per mechanism, form and dtype") << "\n"
     << "**What is computed.** " << grid_text(ctx, g) << " The inputs are rounded once to bf16, fp16 or fp32; each "
        "form the registry gives the mechanism (serial, chunked with C = " << kChunk << ", streamed; not the O(T²) "
        "materialised definition) runs in float on those inputs and its output is rounded to the dtype: exactly the "
        "gate's CPU subjects `ref-<form>-f32`, i.e. a kernel with bf16/fp16/fp32 inputs and outputs and float "
        "accumulation. Each is compared with the oracle (the serial form at dd_real, ~106 bits) on the same rounded "
        "inputs. Plotted per mechanism: the worst timestep's relative error max_t ‖y_t − o_t‖₂/‖o_t‖₂ (the gate's "
        "`max_rel_err`), the largest over the seeds; the dashed lines are each dtype's unit roundoff u (bf16 2⁻⁸, fp16 "
        "2⁻¹¹, fp32 2⁻²⁴), the error of rounding the exact output to the dtype, which no kernel can beat. "
        "Scan forms are not in the registry (VLA's Blelloch scan is checked against serial by claim VLA-C9), so "
        "they have no rows here.\n\n";
  if (h200.present)
    md << "**GPU rows.** Every non-reference result of `" << h200.path << "` (tree hash `" << h200.tree_hash
       << "`) is drawn as a cross in its dtype's colour at its T (the H200 gate's own shapes and seeds; plain and "
          "varlen kernels of a mechanism share its panel).\n\n";
  else
    md << "**GPU rows: none.** `" << h200.path << "` does not exist yet (the H200 gate of the GPU kernels has not been "
          "committed), so this report has no GPU numbers; the figure and table fill in when it is committed and the "
          "report regenerated.\n\n";
  md << "Worst `max_rel_err` over forms and seeds at the shortest and longest T (CPU reference forms):\n\n| mechanism |";
  for (Dtype d : kDtypes)
    md << " " << ref::dtype_name(d) << " T=" << g.lengths.front() << " | " << ref::dtype_name(d) << " T=" << g.lengths.back() << " |";
  md << "\n|---|";
  for (std::size_t i = 0; i < 2 * kDtypes.size(); ++i) md << "---|";
  md << "\n";
  for (const h::Mechanism& m : h::mechanisms()) {
    if (m.computes_gradients()) continue;
    md << "| " << m.name << " |";
    for (Dtype d : kDtypes)
      for (std::int64_t T : {g.lengths.front(), g.lengths.back()}) {
        const FormRow* w = worst(data.forms, [&](const FormRow& r) {
          return r.source == "cpu" && r.mechanism == m.name && r.dtype == ref::dtype_name(d) && r.T == T;
        });
        md << " " << (w ? num(w->max_rel_err) : "–") << " |";
      }
    md << "\n";
  }
  md << "\nLargest over the whole grid per dtype:";
  for (Dtype d : kDtypes) {
    const FormRow* w = worst(data.forms, [&](const FormRow& r) { return r.source == "cpu" && r.dtype == ref::dtype_name(d); });
    if (w)
      md << " " << ref::dtype_name(d) << " " << num(w->max_rel_err) << " (" << num(w->max_rel_err / ref::dtype_unit_roundoff(d))
         << " u; " << w->mechanism << " " << w->form << ", T = " << w->T << ", seed " << w->seed << ");";
  }
  md << " (a multiple of u near 1: the dtype's rounding of inputs and outputs dominates; larger multiples are the "
        "float arithmetic's accumulated rounding).\n";
  s.markdown = md.str();
  return s;
}

Section timestep_section(const ReportContext& ctx, const Grid& g, const GridData& data) {
  Csv csv("mechanism,form,dtype,T,t,rel_err");
  for (const StripRow& r : data.strips)
    for (std::size_t t = 0; t < r.rel.size(); ++t)
      csv.cell(r.mechanism).cell(r.form).cell("fp32").cell(g.lengths[g.strip]).cell(static_cast<std::int64_t>(t))
          .cell(num(r.rel[t], 4)).end_row();
  write_data(ctx, "timestep_error.csv", csv.text());
  Section s;
  s.figures = {{"timestep_error", {"timestep_error.csv", "accuracy_grid.json"}}};
  std::ostringstream md;
  md << "## 2. Per-timestep error of the chunked forms\n\n"
     << figure_markdown(ctx, s.figures[0], "per-timestep relative error, chunked beside serial") << "\n"
     << "**What is computed.** For each mechanism with a chunked form, the first case of section 1 at T = "
     << g.lengths[g.strip] << " in fp32: the relative error ‖y_t − o_t‖₂/‖o_t‖₂ of every timestep t, for the chunked form (C = " << kChunk
     << ", float) and the serial form (float) on the same inputs. Dotted verticals mark chunk boundaries; an error "
        "that jumps or resets there is a chunk-boundary effect (the inter-chunk state carried in float).\n\n"
     << "| mechanism | mean error chunked / serial | chunked: mean error, last token of a chunk / first | worst chunked timestep t (t mod C) |\n"
        "|---|---|---|---|\n";
  for (const StripRow& c : data.strips) {
    if (c.form != "chunked") continue;
    const auto serial = std::find_if(data.strips.begin(), data.strips.end(),
                                     [&](const StripRow& r) { return r.mechanism == c.mechanism && r.form == "serial"; });
    double sc = 0, ss = 0, first = 0, last = 0;
    int n_first = 0, n_last = 0;
    for (std::size_t t = 0; t < c.rel.size(); ++t) {
      sc += c.rel[t];
      if (serial != data.strips.end()) ss += serial->rel[t];
      if (t % kChunk == 0) first += c.rel[t], ++n_first;
      if (t % kChunk == kChunk - 1) last += c.rel[t], ++n_last;
    }
    const std::size_t w = static_cast<std::size_t>(std::max_element(c.rel.begin(), c.rel.end()) - c.rel.begin());
    md << "| " << c.mechanism << " | " << (ss > 0 ? num(sc / ss) : "–") << " | "
       << (n_first && n_last && first > 0 ? num((last / n_last) / (first / n_first)) : "–") << " | " << w << " ("
       << w % kChunk << ") |\n";
  }
  s.markdown = md.str();
  return s;
}

Section certification_section(const ReportContext& ctx, const Grid& g, const GridData& data) {
  Csv csv("mechanism,dtype,T,seed,double_vs_dd,float128_vs_dd,certification_margin");
  double worst_double = 0, worst_f128 = 0;
  std::map<std::string, double> smallest_margin;
  for (const RungRow& r : data.rungs) {
    csv.cell(r.mechanism).cell(r.dtype).cell(r.T).cell(static_cast<std::int64_t>(r.seed)).cell(r.double_vs_dd)
        .cell(r.float128_vs_dd).cell(r.margin).end_row();
    worst_double = std::max(worst_double, r.double_vs_dd);
    if (std::isfinite(r.float128_vs_dd)) worst_f128 = std::max(worst_f128, r.float128_vs_dd);
    auto [it, fresh] = smallest_margin.emplace(r.dtype, r.margin);
    if (!fresh) it->second = std::min(it->second, r.margin);
  }
  write_data(ctx, "oracle_certification.csv", csv.text());
  Section s;
  s.figures = {{"oracle_certification", {"oracle_certification.csv"}}};
  std::ostringstream md;
  md << "## 6. The oracle's self-certification\n\n"
     << figure_markdown(ctx, s.figures[0], "differences between ladder rungs and the certification margin") << "\n"
     << "**What is computed.** On every case of section 1 (the same inputs), the serial form at the other rungs of the "
        "precision ladder against the dd_real oracle, all kept in float64: max_t ‖x_t − o_t‖₂/‖o_t‖₂ for x = double "
        "(every case) and x = float128 (fp32 inputs, T ≤ " << g.float128_max_T << "). Left: these differences versus "
        "T. Right: the certification margin the gate checks, min_t u_D‖o_t‖₂ / e_t with e_t the gate's estimate "
        "‖|dd − double| + u₆₄|dd|‖₂ of the oracle's error at t; the tolerance of a timestep is at least u_D‖o_t‖₂, so "
        "a margin above the dashed line (1000) certifies the oracle for every case the gate could judge at that dtype.\n\n"
     << "Largest double-vs-dd difference over the grid: " << num(worst_double) << " (relative); largest float128-vs-dd: "
     << num(worst_f128) << " (dd and float128 agree to float64's rounding, u₆₄ = 1.1e-16: the oracle's own error is "
        "below what float64 can show). Smallest certification margin:";
  for (const auto& [dtype, margin] : smallest_margin) md << " " << dtype << " " << num(margin) << ";";
  md << " the gate requires 1000.\n";
  s.markdown = md.str();
  return s;
}

// ---- Section 7: gradients (docs/gate.md \"Gradient cases\") ------------------------------------------

struct GradientGrid {
  std::vector<std::int64_t> lengths;
  int seeds = 1;
  std::int64_t K = 32, V = 32;
};

GradientGrid gradient_grid_for(const ReportContext& ctx) {
  if (ctx.small) return {{16, 64}, 1, 4, 4};
  return {{64, 256, 1024}, 2, 32, 32};
}

// The strong decays of the dg comparison: g ~ U(−8, −3) on every token, so each step keeps at most
// e^{−3} ≈ 5% of the state (docs/gradients.md: the suffix-sum form cancels there).
constexpr double kStrongDecayLo = -8, kStrongDecayHi = -3;
constexpr std::uint64_t kStrongDecayStream = 0x7d;  // mix_seed stream of those decays

struct GradientRow {
  std::string mechanism, gradient, dtype;
  std::int64_t T = 0;
  std::uint64_t seed = 0;
  double max_rel_err = 0, rel_rms = 0;
};

struct DgFormRow {
  std::string dtype;
  std::int64_t T = 0;
  std::uint64_t seed = 0;
  double direct_rms = 0, identity_rms = 0, direct_max = 0, identity_max = 0;
};

// Output `name` of `m` against the oracle: the worst slice's relative error (slices as the gate's
// gradient policy cuts them: per timestep, or per (sequence, head) for dh0; slices where the oracle is
// exactly 0, such as dg at t = 0 without an initial state, have no relative error and are left out)
// and the whole tensor's ‖y − o‖_F / ‖o‖_F (every element).
std::pair<double, double> output_errors(const h::Mechanism& m, const std::string& name, const ref::Tensor<double>& y,
                                        const ref::Tensor<double>& oracle) {
  const int axis = m.time_axis(name), leading = m.leading_slice_axes(name);
  const std::vector<double> norms = h::slice_norms(oracle, axis, leading);
  const std::vector<double> rel = relative_errors(y, oracle, axis, norms, leading);
  double worst = 0, diff = 0, size = 0;
  for (std::size_t t = 0; t < rel.size(); ++t)
    if (norms[t] > 0) worst = std::max(worst, rel[t]);
  for (std::size_t i = 0; i < y.data.size(); ++i) {
    diff += (y.data[i] - oracle.data[i]) * (y.data[i] - oracle.data[i]);
    size += oracle.data[i] * oracle.data[i];
  }
  return {worst, size > 0 ? std::sqrt(diff / size) : diff > 0 ? std::numeric_limits<double>::infinity() : 0.0};
}

// One case of a gradient twin: the gate's CPU subject ref-serial-f32 (the float serial adjoint on the
// rounded inputs, gradients rounded to their dtypes) against the dd oracle, per gradient.
void run_gradient_case(const GradientGrid& g, const h::Mechanism& m, std::int64_t T, std::uint64_t seed, Dtype dtype,
                       std::vector<GradientRow>& rows) {
  const h::CaseSpec spec = one_head_case(m, T, g.K, g.V, seed, dtype);
  const h::PreparedCase p = h::prepare_case(spec);
  const h::Subject& s = h::find_subject("ref-serial-f32", m.name);
  h::TensorMap out = h::poisoned_outputs(m, p);
  s.launch(p.inputs, out);
  for (const h::TensorSpec& o : m.outputs) {
    if (!p.oracle.count(o.name)) continue;  // an optional gradient the case does not have
    const auto [worst_slice, whole] = output_errors(m, o.name, out.at(o.name).decode(), p.oracle.at(o.name));
    rows.push_back({m.name, o.name, std::string(ref::dtype_name(dtype)), T, seed, worst_slice, whole});
  }
}

ref::Tensor<float> to_float(const ref::Tensor<double>& x) {
  ref::Tensor<float> r;
  r.shape = x.shape;
  for (double v : x.data) r.data.push_back(static_cast<float>(v));
  return r;
}

// GDN's dg [B,T,H] by identity I3 in float: the chunk-local form (reference/chunk_local_decay_gradient.h)
// with one chunk spanning the sequence, from the float forward's o and final state, the float adjoint's
// dv and the case's v and cotangents.
ref::Tensor<double> identity_form_dg(const h::ValueMap& in, const h::ValueMap& forward, const h::ValueMap& grads) {
  ref::BatchedCotangents<float> cot{to_float(in.at("do")), std::nullopt};
  if (in.count("dht")) cot.d_final_state = to_float(in.at("dht"));
  const ref::Tensor<float> v = to_float(in.at("v"));
  const ref::Tensor<float> r = ref::chunk_local_log_decay_gradient<float>(
      to_float(forward.at("o")), to_float(forward.at("final_state")), cot, v, to_float(grads.at("dv")),
      ref::Tensor<float>(grads.at("dg").shape), std::max<std::int64_t>(v.dim(1), 1));
  ref::Tensor<double> dg(r.shape);
  dg.data.assign(r.data.begin(), r.data.end());
  return dg;
}

// One strong-decay case of gdn-backward: the generator's inputs with g ~ U(−8, −3), rounded to the
// dtype; dg in float by the direct form (the float serial adjoint's α_t dα_t) and by identity I3, both
// kept in float (not rounded to the dtype, which would hide the forms' difference at bf16), against
// the dd oracle's dg.
DgFormRow run_dg_forms_case(const GradientGrid& g, std::int64_t T, std::uint64_t seed, Dtype dtype) {
  const h::Mechanism& m = h::find_mechanism("gdn-backward");
  h::CaseSpec spec;
  spec.mechanism = m.name;
  spec.dtype = dtype;
  spec.shape = {1, T, 1, g.K, g.V};
  spec.seed = seed;
  h::ValueMap values = m.generate(spec.shape, seed, m.resolve_knobs({}));
  cases::Rng rng(cases::mix_seed(seed, kStrongDecayStream));
  values.at("g") = cases::uniform_tensor(rng, values.at("g").shape, kStrongDecayLo, kStrongDecayHi, cases::in_order);
  const h::PreparedCase p = h::prepare_case(spec, values);
  const h::ValueMap inputs = h::decode_all(p.inputs);
  const h::ValueMap grads = m.compute(inputs, h::Precision::f32, ref::Form::serial, 0);
  const h::ValueMap forward = h::find_mechanism("gdn").compute(inputs, h::Precision::f32, ref::Form::serial, 0);
  const ref::Tensor<double>& oracle = p.oracle.at("dg");
  const auto [direct_max, direct_rms] = output_errors(m, "dg", grads.at("dg"), oracle);
  const auto [identity_max, identity_rms] = output_errors(m, "dg", identity_form_dg(inputs, forward, grads), oracle);
  return {std::string(ref::dtype_name(dtype)), T, seed, direct_rms, identity_rms, direct_max, identity_max};
}

Section gradient_section(const ReportContext& ctx) {
  const auto start = std::chrono::steady_clock::now();
  const GradientGrid g = gradient_grid_for(ctx);
  std::vector<GradientRow> rows;
  std::vector<DgFormRow> dg_rows;
  std::vector<std::string> twins;
  for (const h::Mechanism& m : h::mechanisms()) {
    if (!m.computes_gradients()) continue;
    twins.push_back(m.name);
    const auto twin_start = std::chrono::steady_clock::now();
    for (std::int64_t T : g.lengths)
      for (int s = 0; s < g.seeds; ++s)
        for (Dtype d : kDtypes) run_gradient_case(g, m, T, ctx.seed + static_cast<std::uint64_t>(s), d, rows);
    std::cerr << "larc report: gradients: " << m.name << " ("
              << num(std::chrono::duration<double>(std::chrono::steady_clock::now() - twin_start).count()) << " s)\n";
  }
  for (std::int64_t T : g.lengths)
    for (int s = 0; s < g.seeds; ++s)
      for (Dtype d : kDtypes) dg_rows.push_back(run_dg_forms_case(g, T, ctx.seed + static_cast<std::uint64_t>(s), d));

  Csv csv("mechanism,gradient,dtype,T,seed,max_rel_err,rel_rms,unit_roundoff");
  for (const GradientRow& r : rows)
    csv.cell(r.mechanism).cell(r.gradient).cell(r.dtype).cell(r.T).cell(static_cast<std::int64_t>(r.seed))
        .cell(r.max_rel_err).cell(r.rel_rms).cell(ref::dtype_unit_roundoff(h::parse_dtype(r.dtype))).end_row();
  write_data(ctx, "gradient_error_vs_T.csv", csv.text());
  Csv forms("dtype,T,seed,form,max_rel_err,rel_rms,unit_roundoff");
  for (const DgFormRow& r : dg_rows)
    for (const auto& [form, mx, rms] : {std::tuple<const char*, double, double>{"direct", r.direct_max, r.direct_rms},
                                        {"identity", r.identity_max, r.identity_rms}})
      forms.cell(r.dtype).cell(r.T).cell(static_cast<std::int64_t>(r.seed)).cell(std::string(form)).cell(mx).cell(rms)
          .cell(ref::dtype_unit_roundoff(h::parse_dtype(r.dtype))).end_row();
  write_data(ctx, "dg_forms.csv", forms.text());

  Section s;
  s.figures = {{"gradient_error_vs_T", {"gradient_error_vs_T.csv"}}, {"dg_forms", {"dg_forms.csv"}}};
  std::ostringstream md;
  md << "## 7. Gradients: error versus T, and dg's two forms under strong decay\n\n"
     << figure_markdown(ctx, s.figures[0], "gradient relative error versus T per gradient twin, gradient and dtype") << "\n"
     << "**What is computed.** Every gradient twin in the registry (docs/gate.md \"Gradient cases\"), inputs and "
        "cotangents from its generator at default knobs (do and dht at matched magnitudes where the forward has a "
        "final state), B = H = 1, K = " << g.K << ", V = " << g.V << ", T ∈ {";
  for (std::size_t i = 0; i < g.lengths.size(); ++i) md << (i ? ", " : "") << g.lengths[i];
  md << "}, " << g.seeds << " seed(s) from " << ctx.seed << ". The inputs are rounded once to bf16, fp16 or fp32; the "
        "gate's CPU subject `ref-serial-f32` of the twin — the serial adjoint (the reference's backward verb, "
        "checkpointed every 64 tokens) in float, each gradient rounded to its dtype (dh0 float32) — is compared with "
        "the oracle, the same verb at dd_real on the same inputs. Plotted: the whole-tensor relative error "
        "‖y − o‖_F/‖o‖_F per gradient (marker) and dtype (colour), the largest over the seeds; the data file also "
        "holds the worst slice's error as the gradient policy slices (per timestep; dh0 per (sequence, head)). "
        "Dashed: each dtype's unit roundoff.\n\n";
  md << "Whole-tensor relative error at T = " << g.lengths.front() << " and T = " << g.lengths.back()
     << " (largest over seeds):\n\n| twin | gradient |";
  for (Dtype d : kDtypes)
    md << " " << ref::dtype_name(d) << " T=" << g.lengths.front() << " | " << ref::dtype_name(d) << " T=" << g.lengths.back() << " |";
  md << "\n|---|---|";
  for (std::size_t i = 0; i < 2 * kDtypes.size(); ++i) md << "---|";
  md << "\n";
  auto worst_rms = [&](const std::string& twin, const std::string& gradient, Dtype d, std::int64_t T) {
    double w = -1;
    for (const GradientRow& r : rows)
      if (r.mechanism == twin && r.gradient == gradient && r.dtype == ref::dtype_name(d) && r.T == T) w = std::max(w, r.rel_rms);
    return w;
  };
  for (const std::string& twin : twins)
    for (const h::TensorSpec& o : h::find_mechanism(twin).outputs) {
      md << "| " << twin << " | " << o.name << " |";
      for (Dtype d : kDtypes)
        for (std::int64_t T : {g.lengths.front(), g.lengths.back()}) {
          const double w = worst_rms(twin, o.name, d, T);
          md << " " << (w >= 0 ? num(w) : "–") << " |";
        }
      md << "\n";
    }
  md << "\n### dg: the direct form against the identity form under strong decay\n\n"
     << figure_markdown(ctx, s.figures[1], "dg's relative error, direct and identity form, under strong decay") << "\n"
     << "**What is computed.** gdn-backward's inputs as above but with log-decays g ~ U(" << kStrongDecayLo << ", "
     << kStrongDecayHi << ") on every token (each step keeps at most e⁻³ ≈ 5% of the state), rounded to the dtype. "
        "dg is computed twice in float from the same rounded inputs: the **direct** form dg_t = α_t⟨P_t, D_t⟩, what "
        "the float serial adjoint returns, and the **identity** form dg_t = Σ_{s≥t}(o_s·do_s − v_s·dv_s) + ⟨S_T, dht⟩ "
        "(docs/gradients.md, I3; `chunk_local_log_decay_gradient` with one chunk) from the float forward's o and S_T and "
        "the float adjoint's dv — the form chunked kernels use chunk-locally. Both are kept in float (not rounded to "
        "the dtype) and compared with the dd oracle's dg. The two are equal in exact arithmetic (the reference's "
        "rational tests check it); in float the identity's suffix sums keep the size of the loss's terms while dg_t "
        "shrinks with the decay, so it cancels.\n\n"
     << "| dtype | T | direct: ‖·‖ rel. error | identity: ‖·‖ rel. error | identity / direct | direct: worst token | identity: worst token |\n"
        "|---|---|---|---|---|---|---|\n";
  for (Dtype d : kDtypes)
    for (std::int64_t T : g.lengths) {
      DgFormRow w{std::string(ref::dtype_name(d)), T};
      for (const DgFormRow& r : dg_rows)
        if (r.dtype == w.dtype && r.T == T) {
          w.direct_rms = std::max(w.direct_rms, r.direct_rms), w.identity_rms = std::max(w.identity_rms, r.identity_rms);
          w.direct_max = std::max(w.direct_max, r.direct_max), w.identity_max = std::max(w.identity_max, r.identity_max);
        }
      md << "| " << w.dtype << " | " << T << " | " << num(w.direct_rms) << " | " << num(w.identity_rms) << " | "
         << (w.direct_rms > 0 ? num(w.identity_rms / w.direct_rms) : "–") << " | " << num(w.direct_max) << " | "
         << num(w.identity_max) << " |\n";
    }
  md << "\n(Largest over the seeds; \"worst token\" is max_t |dg_t − dd_t| / |dd_t| over the tokens where the oracle's "
        "dg_t is not exactly 0 — t = 0 has dg_0 = 0 without an initial state, docs/gradients.md I7.)\n";
  s.markdown = md.str();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

void write_grid_json(const ReportContext& ctx, const Grid& g) {
  nlohmann::json dtypes;
  for (Dtype d : kDtypes) dtypes[std::string(ref::dtype_name(d))] = ref::dtype_unit_roundoff(d);
  const nlohmann::json j = {{"lengths", g.lengths}, {"seeds_per_length", g.seeds}, {"first_seed", ctx.seed},
                            {"B", 1}, {"H", 1}, {"K", g.K}, {"V", g.V}, {"chunk", kChunk}, {"unit_roundoff", dtypes},
                            {"strip_T", g.lengths[g.strip]}, {"float128_max_T", g.float128_max_T},
                            {"oracle", "serial form at dd_real, kept in float64"}};
  write_data(ctx, "accuracy_grid.json", j.dump(2) + "\n");
}

}  // namespace

AccuracySections accuracy_sections(const ReportContext& ctx, const H200Gate& h200) {
  const auto start = std::chrono::steady_clock::now();
  const Grid g = grid_for(ctx);
  write_grid_json(ctx, g);
  GridData data = compute_grid(ctx, g);
  add_h200_rows(h200, data);
  AccuracySections s{error_vs_length_section(ctx, g, data, h200), timestep_section(ctx, g, data),
                     certification_section(ctx, g, data), {}};
  s.error_vs_length.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  s.gradients = gradient_section(ctx);
  return s;
}

}  // namespace larc::report
