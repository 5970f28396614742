#include "larc/harness/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>

#include "cores.h"
#include "larc/harness/cores.h"
#include "larc/reference/low_precision.h"
#include "reference_subjects.h"

namespace larc::harness {

namespace {
std::string knob_value(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The dtype of a case's tensor: the case's, or float32 for the states FLA keeps in float32.
Dtype tensor_dtype(const TensorSpec& spec, Dtype case_dtype) { return spec.always_fp32 ? Dtype::fp32 : case_dtype; }

// Per output, per slice: ‖|oracle − other| + u₆₄·|oracle|‖₂, where `other` is the reference at a
// second precision and u₆₄·|oracle| bounds the rounding of the dd oracle to the float64 it is kept in.
std::map<std::string, std::vector<double>> estimate_against(const Mechanism& m, const ValueMap& inputs,
                                                            const ValueMap& oracle, Precision other) {
  const ValueMap second = m.compute(inputs, other, ref::Form::serial, 0);
  const double u64 = ref::dtype_unit_roundoff(Dtype::fp64);
  std::map<std::string, std::vector<double>> est;
  for (const auto& [name, o] : oracle) {
    ref::Tensor<double> diff = o;
    const ref::Tensor<double>& s = second.at(name);
    for (std::size_t i = 0; i < diff.data.size(); ++i)
      diff.data[i] = std::fabs(o.data[i] - s.data[i]) + u64 * std::fabs(o.data[i]);
    est[name] = slice_norms(diff, m.time_axis(name), m.leading_slice_axes(name));
  }
  return est;
}

const char* kDoubleMethod = "|dd - double| + u64|dd| (the double run's error bounds dd's from above)";
const char* kF128Method = "|dd - float128| + u64|dd| (escalated: the double estimate was not 1000x below the tolerance)";

// The reference's outputs of a baseline, each rounded to its dtype, in float64.
ValueMap baseline_values(const Mechanism& m, const PreparedCase& p, const std::function<void(TensorMap&)>& run) {
  TensorMap base = poisoned_outputs(m, p);
  run(base);
  return decode_all(base);
}

// Judges `values` (the subject's outputs) and fills r.outputs, r.errors and r.pass; escalates the
// oracle's estimate to float128 once when it does not certify at double. Every output is judged at
// fp32 and, where the mechanism has an io form, at the relaxed grade of the case's dtype (grade.h);
// the verdict is the declared grade's.
void judge_values(const PreparedCase& p, const ValueMap& values, const std::map<std::string, std::vector<bool>>& unwritten,
                  const GradeDeclaration& grades, const ToleranceConfig& cfg, CaseResult& r) {
  const Mechanism& m = find_mechanism(p.spec.mechanism);
  grades.validate(m);
  // The reference's float forms (tolerance.h: the baseline's level), then, where the mechanism derives gates
  // from its inputs, the same forms under each rounding draw of them; the forms come first, named.
  std::vector<ValueMap> baselines;
  std::vector<std::string_view> baseline_forms;
  const std::uint64_t draws = m.compute_rounding_draw ? cfg.rounding_draws : 0;
  for (std::uint64_t draw = 0; draw <= draws; ++draw)
    for (ref::Form form : m.forms) {
      if (form == ref::Form::materialized && (draw > 0 || !(p.spec.shape.T <= m.materialized_baseline_max_T))) continue;
      baselines.push_back(
          baseline_values(m, p, [&](TensorMap& out) { detail::run_reference_in_float(m, form, p.inputs, out, draw); }));
      if (draw == 0) baseline_forms.push_back(ref::form_name(form));
    }
  std::vector<std::pair<Grade, ValueMap>> io_baselines;  // one per relaxed grade of the dtype
  if (m.compute_io)
    for (Grade g : relaxed_grades_for(p.spec.dtype))
      io_baselines.emplace_back(g, baseline_values(m, p, [&](TensorMap& out) {
        detail::run_reference_io(m, io_operand_format(g, p.spec.dtype), grades.chunk, p.inputs, out);
      }));

  // Every judgement of a case is independent of the others — per output: at fp32 against every float
  // baseline, against each baseline alone (its error, for the conditioning) and at each io grade — so they
  // run on the idle cores together, then are put together per output in order.
  auto judge_all = [&](const std::map<std::string, std::vector<double>>& estimate) {
    struct Task {
      Task(std::size_t o, int b, std::optional<Grade> g) : output(o), baseline(b), grade(g) {}
      std::size_t output;          // index into judged
      int baseline;                // ≥ 0: the one float baseline judged alone (for baseline_errors)
      std::optional<Grade> grade;  // else the grade judged (fp32 with every float baseline, or an io grade)
      Judgement result;
    };
    std::vector<OutputUnderTest> judged;
    std::vector<const TensorSpec*> specs;
    std::vector<Task> tasks;
    for (const TensorSpec& spec : m.outputs) {
      const auto v = values.find(spec.name);
      if (v == values.end() || !p.oracle.count(spec.name)) continue;  // an optional output the case has not
      OutputUnderTest out;
      out.name = spec.name;
      out.dtype = tensor_dtype(spec, p.spec.dtype);
      out.time_axis = m.time_axis(spec.name);
      out.leading_axes = m.leading_slice_axes(spec.name);
      out.gradient = spec.gradient;
      out.subject = &v->second;
      const auto u = unwritten.find(spec.name);
      out.unwritten = u == unwritten.end() ? nullptr : &u->second;
      out.oracle = &p.oracle.at(spec.name);
      for (const ValueMap& b : baselines) out.baselines.push_back(&b.at(spec.name));
      const auto e = estimate.find(spec.name);
      if (e != estimate.end()) out.oracle_error = e->second;
      const std::size_t index = judged.size();
      judged.push_back(std::move(out));
      specs.push_back(&spec);
      tasks.emplace_back(index, -1, Grade::fp32);
      if (baselines.size() > 1)  // each form's own error (the draws' are the same forms')
        for (std::size_t i = 0; i < baseline_forms.size(); ++i) tasks.emplace_back(index, static_cast<int>(i), std::nullopt);
      for (const auto& [g, io] : io_baselines) tasks.emplace_back(index, -1, g);
    }
    const detail::CoreClaim helpers(static_cast<unsigned>(std::min<std::size_t>(tasks.empty() ? 0 : tasks.size() - 1, core_budget())));
    detail::parallel_for(tasks.size(), helpers, [&](std::size_t i) {
      Task& t = tasks[i];
      OutputUnderTest out = judged[t.output];
      if (t.baseline >= 0) {
        out.baselines = {out.baselines[static_cast<std::size_t>(t.baseline)]};
      } else if (*t.grade != Grade::fp32) {
        for (const auto& [g, io] : io_baselines)
          if (g == *t.grade) out.baselines.push_back(&io.at(out.name));
      }
      t.result = judge(out, cfg);
    });
    std::vector<Judgement> js;
    for (std::size_t o = 0; o < judged.size(); ++o) {
      std::map<Grade, Judgement> at;  // ordered strictest first (Grade's order)
      std::map<std::string, double, std::less<>> baseline_errors;
      for (Task& t : tasks) {
        if (t.output != o) continue;
        if (t.baseline >= 0)
          baseline_errors[std::string(baseline_forms[static_cast<std::size_t>(t.baseline)])] = t.result.baseline_rel_err;
        else
          at.emplace(*t.grade, std::move(t.result));
      }
      const Grade declared = grades.of(specs[o]->name), verdict = effective_grade(declared, p.spec.dtype);
      // A relaxed grade adds one baseline to fp32's, so its tolerance is never below fp32's and an output
      // that meets fp32 meets it. Its own judgement can still fail there in one way: its baseline leaving
      // the dtype's range (non-finite where the oracle is finite, docs/gate.md "Precision grades"); the
      // verdict is then fp32's.
      Judgement j = at.at(at.at(verdict).pass || !at.at(Grade::fp32).pass ? verdict : Grade::fp32);
      j.grade_declared = grade_name(declared);
      j.baseline_errors = std::move(baseline_errors);
      j.grade_met = "none";
      for (const auto& [g, jg] : at) {
        j.grades[std::string(grade_name(g))] = {jg.pass, jg.worst_ratio, jg.baseline_rel_err};
        if (jg.pass && j.grade_met == "none") j.grade_met = grade_name(g);  // fp32 comes first: the strictest
      }
      js.push_back(std::move(j));
    }
    return js;
  };
  r.oracle_method = p.oracle_method;
  r.outputs = judge_all(p.oracle_error);
  bool certified = true;
  for (const Judgement& j : r.outputs) certified = certified && j.oracle_certified;
  if (!certified) {
    r.outputs = judge_all(estimate_against(m, decode_all(p.inputs), p.oracle, Precision::f128));
    r.oracle_method = kF128Method;
  }
  for (const Judgement& j : r.outputs)
    for (const std::string& v : j.violations) r.errors.push_back(v);
  bool all_pass = true;
  for (const Judgement& j : r.outputs) all_pass = all_pass && j.pass;
  r.pass = all_pass && r.errors.empty();
}

// For a subject that leaves the padding rows of a case with sequence lengths unwritten
// (ShapeLimits::padding_unwritten): every element of an output's row t ≥ seq_lens[b] still poisoned is
// taken as the zero the oracle holds there. A written padding element is judged as any other.
void accept_unwritten_padding(const Mechanism& m, const PreparedCase& p, ValueMap& values,
                              std::map<std::string, std::vector<bool>>& unwritten) {
  const auto lengths = p.inputs.find(kSeqLensInput);
  if (lengths == p.inputs.end()) return;
  const ref::Tensor<double> seq_lens = lengths->second.decode();
  for (const TensorSpec& spec : m.outputs) {
    const auto v = values.find(spec.name);
    const std::size_t b_axis = spec.dims.find('B'), t_axis = spec.dims.find('T');
    if (v == values.end() || b_axis != 0 || t_axis != 1 || v->second.data.empty()) continue;  // per token: [B, T, …]
    ref::Tensor<double>& x = v->second;
    std::vector<bool>& mask = unwritten.at(spec.name);
    const std::size_t T = static_cast<std::size_t>(x.dim(1)), row = x.data.size() / (static_cast<std::size_t>(x.dim(0)) * T);
    for (std::size_t i = 0; i < x.data.size(); ++i) {
      const std::size_t b = i / (T * row), t = i / row % T;
      if (static_cast<double>(t) >= seq_lens.data[b] && mask[i]) {
        mask[i] = false;
        x.data[i] = 0;
      }
    }
  }
}

// Throws std::invalid_argument unless spec.shape is one `m` takes and `found` (Mechanism::shape_of of the
// inputs, which names an input missing, non-finite or out of range) is spec.shape.
void require_shape(const Mechanism& m, const PreparedCase& p, const Shape& found) {
  m.check_shape(p.spec.shape);
  if (found != p.spec.shape)
    throw std::invalid_argument(m.name + ": the inputs have shape " + found.str() + ", the case says " + p.spec.shape.str());
}

// A prepared case's inputs must be the mechanism's, shaped as spec.shape, finite and in range.
void check_inputs(const Mechanism& m, const PreparedCase& p) { require_shape(m, p, m.shape_of(decode_all(p.inputs))); }

// The oracle and its error estimate from the case's inputs, decoded, whose shape_of is `found`.
void compute_oracle_of(const Mechanism& m, PreparedCase& p, const ValueMap& inputs, const Shape& found) {
  require_shape(m, p, found);
  p.oracle = m.compute(inputs, Precision::dd, ref::Form::serial, 0);
  p.oracle_error = estimate_against(m, inputs, p.oracle, Precision::f64);
  p.oracle_method = kDoubleMethod;
}

}  // namespace

TensorMap poisoned_outputs(const Mechanism& m, const Shape& s, Dtype dtype) {
  TensorMap out;
  for (const TensorSpec& o : m.outputs)
    if (!o.optional) out.emplace(o.name, TypedTensor::poisoned(tensor_dtype(o, dtype), dims_of(o.dims, s)));
  return out;
}

TensorMap poisoned_outputs(const Mechanism& m, const PreparedCase& p) {
  TensorMap out = poisoned_outputs(m, p.spec.shape, p.spec.dtype);
  for (const TensorSpec& o : m.outputs)
    if (o.optional && p.oracle.count(o.name))
      out.emplace(o.name, TypedTensor::poisoned(tensor_dtype(o, p.spec.dtype), dims_of(o.dims, p.spec.shape)));
  return out;
}

std::string CaseSpec::reproduce() const {
  std::string cmd = "larc gate --subject " + subject + " --mechanism " + mechanism + " --dtype " +
                    std::string(ref::dtype_name(dtype));
  if (origin != "grid" && origin != "random") return cmd + " --fixtures " + origin + " --no-grid";
  cmd += " --shape " + shape.str() + " --seed " + std::to_string(seed);
  const KnobValues defaults = find_mechanism(mechanism).resolve_knobs({});
  for (const auto& [name, value] : knobs)
    if (defaults.at(name) != value) cmd += " --knob " + name + "=" + knob_value(value);
  return cmd;
}

const Judgement* CaseResult::main_output() const {
  for (const Mechanism& m : mechanisms())  // o, or a gradient twin's first gradient
    if (m.name == spec.mechanism)
      for (const Judgement& j : outputs)
        if (j.output == m.outputs.front().name) return &j;
  return nullptr;
}

void compute_oracle(PreparedCase& p) {
  const Mechanism& m = find_mechanism(p.spec.mechanism);
  const ValueMap inputs = decode_all(p.inputs);
  compute_oracle_of(m, p, inputs, m.shape_of(inputs));
}

PreparedCase prepare_case(const CaseSpec& spec) {
  const Mechanism& m = find_mechanism(spec.mechanism);
  m.check_shape(spec.shape);
  return prepare_case(spec, m.generate(spec.shape, spec.seed, m.resolve_knobs(spec.knobs)));
}

PreparedCase prepare_case(const CaseSpec& spec, const ValueMap& values) {
  const Mechanism& m = find_mechanism(spec.mechanism);
  m.check_shape(spec.shape);
  PreparedCase p;
  p.spec = spec;
  p.spec.knobs = m.resolve_knobs(spec.knobs);
  for (const TensorSpec& in : m.inputs)
    if (const auto v = values.find(in.name); v != values.end())
      p.inputs.emplace(in.name, TypedTensor::encode(tensor_dtype(in, spec.dtype), v->second));
  // Decoded once for the shape and the oracle (a production case's inputs are a few GB as float64).
  const ValueMap inputs = decode_all(p.inputs);
  const Shape found = m.shape_of(inputs);
  p.spec.shape.L = found.L;  // a log-linear case continuing a sequence has more levels
  compute_oracle_of(m, p, inputs, found);
  return p;
}

std::string outside_range(const PreparedCase& p) {
  const Mechanism& m = find_mechanism(p.spec.mechanism);
  for (const TensorSpec& spec : m.outputs) {
    const auto o = p.oracle.find(spec.name);
    if (o == p.oracle.end()) continue;
    const Dtype dtype = tensor_dtype(spec, p.spec.dtype);
    // The value the output's dtype holds (as TypedTensor::set rounds it), element by element: no copy.
    for (std::size_t i = 0; i < o->second.data.size(); ++i)
      if (std::isfinite(o->second.data[i]) && !std::isfinite(ref::round_to(dtype, o->second.data[i]))) {
        char magnitude[32];
        std::snprintf(magnitude, sizeof magnitude, "%.3g", o->second.data[i]);
        return spec.name + ": the oracle is " + magnitude + " at " + coordinate_string(coordinate_of(o->second.shape, i)) +
               ", outside " + std::string(ref::dtype_name(dtype)) + "'s range";
      }
  }
  return {};
}

CaseResult run_subject(const PreparedCase& p, const Subject& subject, const ToleranceConfig& cfg) {
  const auto start = std::chrono::steady_clock::now();
  CaseResult r;
  r.spec = p.spec;
  r.spec.subject = subject.name;
  if (subject.mechanism != p.spec.mechanism)
    throw std::invalid_argument("run_subject: " + subject.name + " implements " + subject.mechanism + ", the case is " +
                                p.spec.mechanism);
  const Mechanism& m = find_mechanism(p.spec.mechanism);
  check_inputs(m, p);
  r.skipped = outside_range(p);
  if (!r.skipped.empty()) {
    r.pass = true;
    return r;
  }
  TensorMap first = poisoned_outputs(m, p);
  TensorMap second = first;
  try {
    subject.launch(p.inputs, first);
    subject.launch(p.inputs, second);
  } catch (const std::exception& e) {
    r.errors.push_back(subject.name + " threw: " + e.what());
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }
  std::map<std::string, std::vector<bool>> unwritten;
  for (auto& [name, t] : first) {
    const TypedTensor& again = second.at(name);
    if (t.shape() != again.shape() || std::memcmp(t.data(), again.data(), t.size_bytes()) != 0) {
      r.deterministic = false;
      r.errors.push_back(name + ": two runs on the same inputs differ (nondeterministic)");
    }
    if (!t.guard_intact() || !again.guard_intact()) r.errors.push_back(name + ": written past its last element");
    std::vector<bool>& mask = unwritten[name];
    mask.resize(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) mask[i] = t.is_poison(i);
  }
  ValueMap values = decode_all(first);
  if (subject.limits.padding_unwritten) accept_unwritten_padding(m, p, values, unwritten);
  judge_values(p, values, unwritten, subject.grades, cfg, r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

CaseResult judge_candidate(const PreparedCase& p, const TensorMap& candidate, const GradeDeclaration& grades,
                           const ToleranceConfig& cfg) {
  const auto start = std::chrono::steady_clock::now();
  CaseResult r;
  r.spec = p.spec;
  const Mechanism& m = find_mechanism(p.spec.mechanism);
  check_inputs(m, p);
  // A forward's candidate must hold its main output; a gradient twin's, every gradient.
  for (const TensorSpec& o : m.outputs)
    if (!candidate.count(o.name) && p.oracle.count(o.name) && (m.computes_gradients() || &o == &m.outputs.front()))
      throw std::invalid_argument("candidate: tensor '" + o.name + "' is missing (" + m.name + " has " + o.meaning + ")");
  ValueMap values;
  for (const auto& [name, t] : candidate) {
    bool known = false;
    for (const TensorSpec& o : m.outputs) known = known || o.name == name;
    if (!known) continue;  // extra tensors (e.g. the inputs echoed back) are not judged
    const auto want = dims_of(m.output(name).dims, p.spec.shape);
    if (t.shape() != want)
      throw std::invalid_argument("candidate: tensor '" + name + "': expected shape " + ref::shape_string(want) + ", got " +
                                  ref::shape_string(t.shape()));
    values.emplace(name, t.decode());
  }
  r.skipped = outside_range(p);
  if (r.skipped.empty()) judge_values(p, values, {}, grades, cfg, r);
  else r.pass = true;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

CaseResult run_case(const CaseSpec& spec, const ToleranceConfig& cfg) {
  const PreparedCase p = prepare_case(spec);
  return run_subject(p, find_subject(spec.subject, spec.mechanism), cfg);
}

}  // namespace larc::harness
