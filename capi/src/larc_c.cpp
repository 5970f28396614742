// The C interface (include/larc/c/larc.h) over harness/: each function parses its JSON, calls the
// harness functions the `larc` program uses (plan_gate, prepare_case, compute_oracle, judge_candidate,
// shrink_failure, the fixture reader and writer, result_json, profiles) and turns every exception into a status and
// larc_last_error().
#include "larc/c/larc.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "larc/fixtures/atomic_file.h"
#include "larc/fixtures/safetensors.h"
#include "larc/harness/fixture.h"
#include "larc/harness/fuzz.h"
#include "larc/harness/fuzz_report.h"
#include "larc/harness/gate.h"
#include "larc/harness/grade_options.h"
#include "larc/harness/profile.h"
#include "owned_string.h"

namespace h = larc::harness;
namespace fx = larc::fixtures;
using nlohmann::json;

// A tensor's view for larc_case_tensor: the strings and the shape its larc_tensor points into.
struct TensorView {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::uint64_t nbytes = 0;
};

struct larc_case {
  h::PreparedCase prepared;
  std::map<std::string, TensorView, std::less<>> views;  // inputs, "oracle.NAME", "oracle_error.NAME"
};

struct larc_result {
  h::CaseResult result;
  std::string reproduce;
  std::map<std::string, json> worst_timesteps;  // per output
};

namespace {

thread_local std::string last_error;

// Runs `body`, returning `failed` with the exception's message kept for larc_last_error.
template <class R, class F>
R guarded(R failed, F&& body) {
  try {
    last_error.clear();
    return body();
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return failed;
}

using larc::c::owned_string;

// Parses a JSON object argument, refusing keys outside `known` (naming the argument and the key).
json parse_object(const char* text, const char* what, const std::set<std::string>& known) {
  if (!text) throw std::invalid_argument(std::string(what) + ": NULL");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(std::string(what) + ": not JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw std::invalid_argument(std::string(what) + ": expected a JSON object");
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) throw std::invalid_argument(std::string(what) + ": unknown key '" + key + "'");
  return j;
}

h::Shape shape_of_json(const json& j) {
  if (j.is_string()) return h::Shape::parse(j.get<std::string>());
  if (!j.is_array() || j.size() != 5) throw std::invalid_argument("shape: expected \"B,T,H,K,V\" or [B, T, H, K, V]");
  const auto v = j.get<std::vector<std::int64_t>>();
  return {v[0], v[1], v[2], v[3], v[4]};
}

h::KnobValues knobs_of_json(const json& j) {
  h::KnobValues k;
  for (const auto& [name, value] : j.items()) {
    if (!value.is_number()) throw std::invalid_argument("knobs: " + name + " must be a number");
    k[name] = value.get<double>();
  }
  return k;
}

json spec_json(const h::CaseSpec& s) {
  return {{"mechanism", s.mechanism}, {"dtype", std::string(larc::ref::dtype_name(s.dtype))}, {"shape", s.shape.str()},
          {"seed", s.seed},           {"knobs", s.knobs},                                        {"origin", s.origin}};
}

h::TypedTensor typed_tensor(const larc_tensor& t) {
  if (!t.name) throw std::invalid_argument("tensor: NULL name");
  const std::string name = t.name;
  if (!t.dtype) throw std::invalid_argument(name + ": NULL dtype");
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape)) throw std::invalid_argument(name + ": bad shape");
  if (!t.data && t.nbytes > 0) throw std::invalid_argument(name + ": NULL data");
  std::vector<std::int64_t> shape(t.shape, t.shape + t.ndim);
  try {
    return h::TypedTensor::from_bytes(h::parse_dtype(t.dtype), shape, static_cast<const std::byte*>(t.data), t.nbytes);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + e.what());
  }
}

h::TensorMap tensor_map(const larc_tensor* tensors, size_t n) {
  if (n > 0 && !tensors) throw std::invalid_argument("tensors: NULL with a nonzero count");
  h::TensorMap out;
  for (size_t i = 0; i < n; ++i) {
    h::TypedTensor t = typed_tensor(tensors[i]);
    if (!out.emplace(tensors[i].name, std::move(t)).second)
      throw std::invalid_argument(std::string(tensors[i].name) + ": given twice");
  }
  return out;
}

std::map<std::string, std::string> string_map(const char* text, const char* what) {
  std::map<std::string, std::string> out;
  if (!text) return out;
  const json j = json::parse(text);
  if (!j.is_object()) throw std::invalid_argument(std::string(what) + ": expected a JSON object of strings");
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) throw std::invalid_argument(std::string(what) + ": " + k + " must be a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

larc_case* make_case(h::PreparedCase prepared) {
  auto c = std::make_unique<larc_case>();
  c->prepared = std::move(prepared);
  for (const auto& [name, t] : c->prepared.inputs)
    c->views[name] = {name, std::string(larc::ref::dtype_name(t.dtype())), t.shape(), t.data(), t.size_bytes()};
  for (const auto& [name, o] : c->prepared.oracle)
    c->views["oracle." + name] = {"oracle." + name, "fp64", o.shape, o.data.data(), o.data.size() * sizeof(double)};
  for (const auto& [name, e] : c->prepared.oracle_error)
    c->views["oracle_error." + name] = {"oracle_error." + name, "fp64", {static_cast<std::int64_t>(e.size())}, e.data(),
                                        e.size() * sizeof(double)};
  return c.release();
}

// The subject a plan is made for: a kernel run from Python, with the caller's dtypes, limits and
// whether it takes an initial state. Registered once per distinct set (the registry is the process's).
const h::Subject& external_subject(const std::string& mechanism, const std::vector<h::Dtype>& dtypes,
                                   const h::ShapeLimits& limits, bool takes_initial_state) {
  std::string name = "python[";
  name += h::describe_limits(limits);
  for (const auto& [flag, on] : {std::pair{"value heads grouped", limits.value_head_groups}, std::pair{"ragged", limits.ragged}})
    if (on) name += std::string(",") + flag;
  for (h::Dtype d : dtypes) {
    name += ',';
    name += larc::ref::dtype_name(d);
  }
  name += takes_initial_state ? "]" : ",no initial state]";
  for (const h::Subject& s : h::subjects())
    if (s.name == name && s.mechanism == mechanism) return s;
  h::Subject s;
  s.name = name;
  s.mechanism = mechanism;
  s.dtypes = dtypes;
  s.limits = limits;
  s.launch = [](const h::TensorMap&, h::TensorMap&) { throw std::logic_error("a kernel planned from Python runs in Python"); };
  s.description = "a callable gated from Python";
  s.limits.initial_state = takes_initial_state;
  h::register_subject(std::move(s));
  return h::find_subject(name, mechanism);
}

h::ShapeLimits limits_of_json(const json& j) {
  static const std::set<std::string> keys{"max_B", "max_T", "max_H", "max_K", "max_V", "min_K", "head_dims",
                                          "value_head_groups", "ragged"};
  h::ShapeLimits l;
  const std::map<std::string, bool*> flags{{"value_head_groups", &l.value_head_groups}, {"ragged", &l.ragged}};
  for (const auto& [key, value] : j.items()) {
    if (!keys.count(key)) throw std::invalid_argument("limits: unknown key '" + key + "'");
    if (const auto flag = flags.find(key); flag != flags.end()) {
      if (!value.is_boolean()) throw std::invalid_argument("limits: " + key + " must be true or false");
      *flag->second = value.get<bool>();
      continue;
    }
    if (key == "head_dims") {
      if (!value.is_array() || !std::all_of(value.begin(), value.end(), [](const json& d) { return d.is_number_integer(); }))
        throw std::invalid_argument("limits: head_dims must be a list of integers");
      l.head_dims = value.get<std::vector<std::int64_t>>();
      continue;
    }
    if (!value.is_number_integer()) throw std::invalid_argument("limits: " + key + " must be an integer");
    const auto v = value.get<std::int64_t>();
    if (v < 0) throw std::invalid_argument("limits: " + key + " must be at least 0");
    (key == "max_B" ? l.max_B : key == "max_T" ? l.max_T : key == "max_H" ? l.max_H : key == "max_K" ? l.max_K
     : key == "max_V" ? l.max_V : l.min_K) = v;
  }
  return l;
}

json tensor_specs_json(const std::vector<h::TensorSpec>& specs) {
  json out = json::array();
  for (const h::TensorSpec& t : specs)
    out.push_back({{"name", t.name}, {"dims", t.dims}, {"meaning", t.meaning}, {"always_fp32", t.always_fp32},
                   {"optional", t.optional}, {"min", t.min}, {"max", t.max}});
  return out;
}

// The worst `n` slices of criterion 3 (error over tolerance), worst first; none where the error is 0.
json worst_slices(const h::Judgement& j, std::size_t n) {
  std::vector<std::size_t> order;
  for (std::size_t t = 0; t < j.slice_error.size(); ++t)
    if (j.slice_error[t] > 0 && t < j.slice_tolerance.size()) order.push_back(t);
  auto ratio = [&](std::size_t t) { return j.slice_tolerance[t] > 0 ? j.slice_error[t] / j.slice_tolerance[t] : HUGE_VAL; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ratio(a) > ratio(b); });
  order.resize(std::min(order.size(), n));
  json out = json::array();
  for (std::size_t t : order) {
    const double r = ratio(t);
    out.push_back({{"t", t}, {"error", j.slice_error[t]}, {"tolerance", j.slice_tolerance[t]},
                   {"ratio", std::isfinite(r) ? json(r) : json(nullptr)}});
  }
  return out;
}

json result_with_extras(const larc_result& r) {
  json j = h::result_json(r.result);
  j["reproduce"] = r.reproduce;
  for (json& o : j["outputs"]) o["worst_timesteps"] = r.worst_timesteps.at(o["output"].get<std::string>());
  return j;
}

std::vector<h::CaseResult> case_results(const larc_result* const* results, size_t n) {
  if (n > 0 && !results) throw std::invalid_argument("results: NULL with a nonzero count");
  std::vector<h::CaseResult> out;
  for (size_t i = 0; i < n; ++i) {
    if (!results[i]) throw std::invalid_argument("results[" + std::to_string(i) + "]: NULL");
    out.push_back(results[i]->result);
  }
  return out;
}

std::mutex registry_mutex;  // the subject registry is the process's; planning registers into it

}  // namespace

extern "C" {

const char* larc_version(void) {
  static const std::string v = h::larc_version();
  return v.c_str();
}

char* larc_tree_hash(void) {
  return guarded<char*>(nullptr, [] { return owned_string(h::source_tree_hash()); });
}

const char* larc_last_error(void) { return last_error.c_str(); }

void larc_string_free(char* s) { std::free(s); }

char* larc_mechanisms_json(void) {
  return guarded<char*>(nullptr, [] {
    json ms = json::array();
    for (const h::Mechanism& m : h::mechanisms()) {
      json knobs = json::array();
      for (const h::Knob& k : m.knobs)
        knobs.push_back({{"name", k.name}, {"lo", k.lo}, {"hi", k.hi}, {"default", k.default_value},
                         {"log_scale", k.log_scale}, {"integer", k.integer}, {"meaning", k.meaning}});
      ms.push_back({{"name", m.name}, {"description", m.description}, {"inputs", tensor_specs_json(m.inputs)},
                    {"outputs", tensor_specs_json(m.outputs)}, {"knobs", knobs}, {"parameters", m.parameters},
                    {"io_form", static_cast<bool>(m.compute_io)}});
    }
    return owned_string(json{{"mechanisms", ms}}.dump());
  });
}

char* larc_plan_json(const char* options_json) {
  return guarded<char*>(nullptr, [&] {
    const json o = parse_object(options_json, "options",
                                {"mechanism", "dtypes", "grid", "shapes", "seed", "random", "knobs", "fixtures", "limits",
                                 "initial_state"});
    if (!o.contains("mechanism")) throw std::invalid_argument("options: mechanism is required");
    const h::Mechanism& m = h::find_mechanism(o["mechanism"].get<std::string>());
    h::GateOptions g;
    g.mechanisms = {m.name};
    std::vector<h::Dtype> dtypes{h::Dtype::bf16, h::Dtype::fp16, h::Dtype::fp32};
    if (o.contains("dtypes")) {
      dtypes.clear();
      for (const std::string& d : o["dtypes"].get<std::vector<std::string>>()) dtypes.push_back(h::parse_dtype(d));
      if (dtypes.empty()) throw std::invalid_argument("dtypes: empty");
    }
    g.dtypes = dtypes;
    g.grid = o.value("grid", true);
    for (const json& s : o.value("shapes", json::array())) g.shapes.push_back(shape_of_json(s));
    g.seed = o.value("seed", std::uint64_t{1});
    g.random = o.value("random", std::uint64_t{0});
    g.knobs = knobs_of_json(o.value("knobs", json::object()));
    g.fixtures = o.value("fixtures", std::vector<std::string>{});
    const h::ShapeLimits limits = limits_of_json(o.value("limits", json::object()));
    const std::lock_guard<std::mutex> lock(registry_mutex);
    g.subjects = {external_subject(m.name, dtypes, limits, o.value("initial_state", true)).name};
    const h::GatePlan plan = h::plan_gate(g);
    json cases = json::array();
    for (const h::GateGroup& group : plan.groups) cases.push_back(spec_json(group.spec));
    return owned_string(json{{"cases", cases}}.dump());
  });
}

larc_case* larc_case_prepare(const char* spec_json_text) {
  return guarded<larc_case*>(nullptr, [&] {
    const json s = parse_object(spec_json_text, "spec", {"mechanism", "dtype", "shape", "seed", "knobs", "origin"});
    h::CaseSpec spec;
    spec.mechanism = h::find_mechanism(s.at("mechanism").get<std::string>()).name;
    spec.dtype = h::parse_dtype(s.value("dtype", std::string("fp32")));
    spec.shape = shape_of_json(s.at("shape"));
    spec.seed = s.value("seed", std::uint64_t{1});
    spec.knobs = knobs_of_json(s.value("knobs", json::object()));
    spec.origin = s.value("origin", std::string("grid"));
    return make_case(h::prepare_case(spec));
  });
}

larc_case* larc_case_from_inputs(const char* spec_json_text, const larc_tensor* inputs, size_t n_inputs) {
  return guarded<larc_case*>(nullptr, [&] {
    const json s = parse_object(spec_json_text, "spec", {"mechanism", "dtype", "shape", "seed", "knobs", "origin"});
    const h::Mechanism& m = h::find_mechanism(s.at("mechanism").get<std::string>());
    h::PreparedCase p;
    p.spec.mechanism = m.name;
    p.spec.dtype = h::parse_dtype(s.value("dtype", std::string("fp32")));
    p.spec.seed = s.value("seed", std::uint64_t{0});
    p.spec.origin = s.value("origin", std::string("inputs given by the caller"));
    p.inputs = tensor_map(inputs, n_inputs);
    for (const auto& [name, t] : p.inputs) {
      const auto spec = std::find_if(m.inputs.begin(), m.inputs.end(), [&](const h::TensorSpec& x) { return x.name == name; });
      if (spec == m.inputs.end()) throw std::invalid_argument(name + ": not an input of " + m.name);
      const h::Dtype want = spec->always_fp32 ? h::Dtype::fp32 : p.spec.dtype;
      if (t.dtype() != want)
        throw std::invalid_argument(name + ": expected dtype " + std::string(larc::ref::dtype_name(want)) + ", got " +
                                    std::string(larc::ref::dtype_name(t.dtype())));
    }
    h::KnobValues knobs = knobs_of_json(s.value("knobs", json::object()));
    for (const h::Knob& k : m.knobs)  // the initial-state knob says whether the inputs hold one
      if (k.name == h::kInitialStateKnob)
        knobs[k.name] = static_cast<double>(p.inputs.count("initial_state") ? h::InitialState::random : h::InitialState::none);
    p.spec.knobs = m.resolve_knobs(knobs);
    p.spec.shape = m.shape_of(h::decode_all(p.inputs));
    h::compute_oracle(p);
    return make_case(std::move(p));
  });
}

larc_case* larc_case_read_fixture(const char* path) {
  return guarded<larc_case*>(nullptr, [&] {
    if (!path) throw std::invalid_argument("path: NULL");
    return make_case(h::read_fixture(path));
  });
}

int larc_case_write_fixture(const larc_case* c, const char* path, const char* metadata_json) {
  return guarded<int>(1, [&] {
    if (!c || !path) throw std::invalid_argument("case or path: NULL");
    h::write_fixture(path, c->prepared, string_map(metadata_json, "metadata"));
    return 0;
  });
}

char* larc_case_json(const larc_case* c) {
  return guarded<char*>(nullptr, [&] {
    if (!c) throw std::invalid_argument("case: NULL");
    const h::PreparedCase& p = c->prepared;
    const h::Mechanism& m = h::find_mechanism(p.spec.mechanism);
    json j = spec_json(p.spec);
    j["parameters"] = m.parameters;
    j["oracle_method"] = p.oracle_method;
    json ins = json::array(), outs = json::array();
    for (const h::TensorSpec& t : m.inputs)
      if (const auto it = p.inputs.find(t.name); it != p.inputs.end())
        ins.push_back({{"name", t.name}, {"dtype", std::string(larc::ref::dtype_name(it->second.dtype()))},
                       {"shape", it->second.shape()}});
    for (const h::TensorSpec& t : m.outputs)
      outs.push_back({{"name", t.name},
                      {"dtype", std::string(larc::ref::dtype_name(t.always_fp32 ? h::Dtype::fp32 : p.spec.dtype))},
                      {"shape", h::dims_of(t.dims, p.spec.shape)},
                      {"time_axis", m.time_axis(t.name)}});
    j["inputs"] = ins;
    j["outputs"] = outs;
    return owned_string(j.dump());
  });
}

int larc_case_tensor(const larc_case* c, const char* name, larc_tensor* out) {
  return guarded<int>(1, [&] {
    if (!c || !name || !out) throw std::invalid_argument("case, name or out: NULL");
    const auto it = c->views.find(std::string_view(name));
    if (it == c->views.end()) throw std::invalid_argument(std::string("tensor '") + name + "': the case has none");
    const TensorView& v = it->second;
    *out = {v.name.c_str(), v.dtype.c_str(), static_cast<int32_t>(v.shape.size()), v.shape.data(), v.data, v.nbytes};
    return 0;
  });
}

void larc_case_free(larc_case* c) { delete c; }

larc_result* larc_judge(const larc_case* c, const larc_tensor* outputs, size_t n_outputs, const char* config_json) {
  return guarded<larc_result*>(nullptr, [&] {
    if (!c) throw std::invalid_argument("case: NULL");
    const json cfg = parse_object(config_json ? config_json : "{}", "config",
                                  {"kernel", "grade", "grade_of", "grade_chunk", "against", "k_reg", "profile_subject",
                                   "errors", "deterministic", "reproduce", "worst_timesteps"});
    const h::GradeDeclaration grades = h::parse_grade_declaration(
        cfg.value("grade", std::string("fp32")), cfg.value("grade_of", std::vector<std::string>{}),
        cfg.value("grade_chunk", std::int64_t{64}), {.grade = "grade", .grade_of = "grade_of"});
    auto r = std::make_unique<larc_result>();
    r->result = h::judge_candidate(c->prepared, tensor_map(outputs, n_outputs), grades);
    r->result.spec.subject = cfg.value("kernel", std::string("python"));
    for (const std::string& e : cfg.value("errors", std::vector<std::string>{})) r->result.errors.push_back(e);
    r->result.deterministic = cfg.value("deterministic", true);
    if (!r->result.errors.empty()) r->result.pass = false;
    if (cfg.contains("against"))
      h::Profile::read(cfg["against"].get<std::string>())
          .check(r->result, {.k_reg = cfg.value("k_reg", h::kRegressionFactor),
                             .as_subject = cfg.value("profile_subject", std::string())});
    r->reproduce = cfg.value("reproduce", std::string());
    const auto n = cfg.value("worst_timesteps", std::size_t{5});
    for (const h::Judgement& j : r->result.outputs) r->worst_timesteps[j.output] = worst_slices(j, n);
    return r.release();
  });
}

char* larc_result_json(const larc_result* r) {
  return guarded<char*>(nullptr, [&] {
    if (!r) throw std::invalid_argument("result: NULL");
    return owned_string(result_with_extras(*r).dump());
  });
}

void larc_result_free(larc_result* r) { delete r; }

char* larc_shrink(const char* failing_json, const char* options_json, larc_shrink_judge judge, void* user) {
  return guarded<char*>(nullptr, [&] {
    if (!judge) throw std::invalid_argument("judge: NULL");
    if (!failing_json) throw std::invalid_argument("failing: NULL");
    h::CaseResult failing;
    try {
      failing = h::result_of_json(json::parse(failing_json));
    } catch (const json::exception& e) {
      throw std::invalid_argument(std::string("failing: not a result JSON (") + e.what() + ")");
    }
    if (failing.pass) throw std::invalid_argument("failing: the case passes; only a failure is shrunk");
    failing.spec.knobs = h::find_mechanism(failing.spec.mechanism).resolve_knobs(failing.spec.knobs);  // every knob
    const json o = parse_object(options_json ? options_json : "{}", "options", {"max_evaluations", "limits"});
    const json max_evaluations = o.value("max_evaluations", json(200));
    if (!max_evaluations.is_number_integer() || max_evaluations.get<std::int64_t>() < 0 ||
        max_evaluations.get<std::int64_t>() > std::numeric_limits<int>::max())
      throw std::invalid_argument("options: max_evaluations must be an integer of at least 0");
    const h::ShapeLimits limits = limits_of_json(o.value("limits", json::object()));
    // The caller runs the kernel; its verdict comes back as result JSON, of the candidate asked for.
    const h::CaseJudge run = [&](const h::CaseSpec& candidate) {
      const std::string spec = spec_json(candidate).dump();
      const char* verdict = judge(spec.c_str(), user);
      if (!verdict) throw std::runtime_error("judge: the callback gave no verdict on the candidate " + spec + "; shrinking stopped there");
      h::CaseResult r;
      try {
        r = h::result_of_json(json::parse(verdict));
      } catch (const json::exception& e) {
        throw std::invalid_argument("judge: the callback's verdict on " + spec + " is not a result JSON (" + e.what() + ")");
      }
      r.spec = candidate;
      return r;
    };
    const h::ShrinkOutcome shrunk = h::shrink_failure(failing, limits, max_evaluations.get<int>(), run);
    json path = json::array();
    for (const h::CaseSpec& s : shrunk.path) path.push_back(spec_json(s));
    return owned_string(json{{"path", path}, {"evaluations", shrunk.evaluations}}.dump());
  });
}

int larc_profile_record(const larc_result* const* results, size_t n, const char* path) {
  return guarded<int>(1, [&] {
    if (!path) throw std::invalid_argument("path: NULL");
    const std::string text = h::record_profile(case_results(results, n), h::source_tree_hash()).dump() + "\n";
    fx::write_file_atomically(path, std::string_view(text));
    return 0;
  });
}

int larc_candidate_write(const char* path, const larc_tensor* tensors, size_t n, const char* metadata_json) {
  return guarded<int>(1, [&] {
    if (!path) throw std::invalid_argument("path: NULL");
    fx::SafetensorsFile f;
    for (auto& [name, t] : tensor_map(tensors, n)) {
      fx::TensorData d;
      d.dtype = t.dtype();
      d.shape = t.shape();
      d.bytes.assign(t.data(), t.data() + t.size_bytes());
      f.tensors.emplace(name, std::move(d));
    }
    f.metadata = string_map(metadata_json, "metadata");
    fx::write_safetensors(path, f);
    return 0;
  });
}

}  // extern "C"
