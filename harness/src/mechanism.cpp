#include "larc/harness/mechanism.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "larc/reference/fenwick.h"
#include "head_split.h"
#include "mechanism_support.h"

namespace larc::harness {

namespace {
std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}
}  // namespace

std::string Shape::str() const {
  std::string s = std::to_string(B) + "," + std::to_string(T) + "," + std::to_string(H) + "," + std::to_string(K) + "," +
                  std::to_string(V);
  if (value_heads() != H) {
    s += ',';
    s += std::to_string(value_heads());
  }
  return s;
}

std::int64_t Shape::levels() const {
  return L != 0 ? L : ref::fenwick::level_count(static_cast<std::uint64_t>(std::max<std::int64_t>(T, 1)));
}

Shape Shape::parse(const std::string& s) {
  std::vector<std::int64_t> v;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t end = std::min(s.find(',', pos), s.size());
    const std::string part = s.substr(pos, end - pos);
    std::size_t used = 0;
    long long x = -1;
    try {
      x = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size())
      throw std::invalid_argument("shape: expected five positive integers B,T,H,K,V (or six, B,T,H,K,V,HV), got '" + s + "'");
    v.push_back(x);
    pos = end + 1;
  }
  if (v.size() != 5 && v.size() != 6)
    throw std::invalid_argument("shape: expected five positive integers B,T,H,K,V (or six, B,T,H,K,V,HV), got '" + s + "'");
  const Shape shape{v[0], v[1], v[2], v[3], v[4], v.size() == 6 ? v[5] : 0};
  shape.require_positive();
  return shape;
}

void Shape::require_positive() const {
  const std::pair<char, std::int64_t> sizes[] = {{'B', B}, {'T', T}, {'H', H}, {'K', K}, {'V', V}};
  for (const auto& [letter, size] : sizes)
    if (size < 1)
      throw std::invalid_argument(std::string("shape: ") + letter + " must be at least 1, got " + std::to_string(size));
  if (HV < 0 || value_heads() % H != 0)
    throw std::invalid_argument("shape: HV must be a positive multiple of H = " + std::to_string(H) + ", got " +
                                std::to_string(HV));
}

std::vector<std::int64_t> dims_of(const std::string& letters, const Shape& s) {
  std::vector<std::int64_t> d;
  for (char c : letters) {
    switch (c) {
      case 'B': d.push_back(s.B); break;
      case 'T': d.push_back(s.T); break;
      case 'H': d.push_back(s.H); break;
      case 'K': d.push_back(s.K); break;
      case 'V': d.push_back(s.V); break;
      case 'W': d.push_back(s.value_heads()); break;
      case '1': d.push_back(1); break;
      case 'L': d.push_back(s.levels()); break;
      default: throw std::invalid_argument(std::string("dims_of: unknown dimension letter '") + c + "'");
    }
  }
  return d;
}

Knob initial_state_knob() {
  return {.name = kInitialStateKnob, .lo = 0, .hi = 2, .default_value = 0,
          .meaning = "initial state: 0 none, 1 zero (passed explicitly), 2 random", .integer = true};
}

InitialState initial_state_of(const KnobValues& knobs) {
  const auto it = knobs.find(kInitialStateKnob);
  return it == knobs.end() ? InitialState::none : static_cast<InitialState>(std::lround(it->second));
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::f32: return "float";
    case Precision::f64: return "double";
    case Precision::dd: return "dd_real";
    case Precision::f128: return "float128";
  }
  return "?";
}

const TensorSpec& Mechanism::output(std::string_view out) const {
  for (const TensorSpec& s : outputs)
    if (s.name == out) return s;
  throw std::invalid_argument(name + ": no output named '" + std::string(out) + "'");
}

int Mechanism::time_axis(std::string_view output_name) const {
  const std::string& dims = output(output_name).dims;
  const auto i = dims.find('T');
  return i == std::string::npos ? -1 : static_cast<int>(i);
}

int Mechanism::leading_slice_axes(std::string_view output_name) const {
  const TensorSpec& spec = output(output_name);
  const bool per_head = spec.dims.rfind("BH", 0) == 0 || spec.dims.rfind("BW", 0) == 0;  // [B,H,…] or [B,HV,…]
  return spec.gradient && time_axis(output_name) < 0 && per_head ? 2 : 0;
}

KnobValues Mechanism::resolve_knobs(const KnobValues& given) const {
  KnobValues r;
  for (const Knob& k : knobs) r[k.name] = k.default_value;
  for (const auto& [n, v] : given) {
    const Knob* knob = nullptr;
    for (const Knob& k : knobs)
      if (k.name == n) knob = &k;
    if (!knob) {
      std::string known;
      for (const Knob& k : knobs) known += (known.empty() ? "" : ", ") + k.name;
      throw std::invalid_argument("knob '" + n + "': not a knob of " + name + " (knobs: " + known + ")");
    }
    if (!(v >= knob->lo && v <= knob->hi) || (knob->integer && v != std::round(v)))
      throw std::invalid_argument("knob '" + n + "': expected " + (knob->integer ? "a whole number" : "a value") + " in [" +
                                  number(knob->lo) + ", " + number(knob->hi) + "], got " + number(v) + " (" +
                                  knob->meaning + ")");
    r[n] = v;
  }
  return r;
}

Shape Mechanism::shape_of(const ValueMap& in) const {
  // Unify every input's dims with its letters: the first input fixing a letter sets it.
  std::map<char, std::int64_t> size;
  for (const TensorSpec& spec : inputs) {
    const auto it = in.find(spec.name);
    if (it == in.end() && spec.optional) continue;
    if (it == in.end()) throw std::invalid_argument(name + ": input '" + spec.name + "' is missing");
    const ref::Tensor<double>& t = it->second;
    bool ok = t.shape.size() == spec.dims.size();
    for (std::size_t i = 0; ok && i < spec.dims.size(); ++i) {
      const char c = spec.dims[i];
      if (c == '1') ok = t.shape[i] == 1;
      else if (size.count(c)) ok = size[c] == t.shape[i];
      else if (t.shape[i] >= 1) size[c] = t.shape[i];
      else ok = false;
    }
    if (!ok) {
      std::string want = "[";
      for (std::size_t i = 0; i < spec.dims.size(); ++i) {
        const char c = spec.dims[i];
        want += (i ? ", " : "") + (size.count(c) ? std::to_string(size[c]) : std::string(1, c));
      }
      throw std::invalid_argument(name + ": input '" + spec.name + "': expected shape " + want + "] (" +
                                  spec.dims + "), got " + ref::shape_string(t.shape));
    }
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      if (!std::isfinite(t.data[i]) && !(spec.minus_infinity && t.data[i] == -std::numeric_limits<double>::infinity()))
        throw std::invalid_argument(name + ": input '" + spec.name + "' holds a non-finite value at flat index " +
                                    std::to_string(i));
      if (t.data[i] < spec.min || t.data[i] > spec.max)
        throw std::invalid_argument(name + ": input '" + spec.name + "' holds " + number(t.data[i]) + " at flat index " +
                                    std::to_string(i) + ", outside [" + number(spec.min) + ", " + number(spec.max) +
                                    "] (" + spec.meaning + ")");
    }
  }
  auto get = [&](char c) { return size.count(c) ? size[c] : 1; };
  const std::int64_t H = size.count('H') ? size['H'] : get('W');
  const Shape s{get('B'), get('T'), H, get('K'), get('V'), size.count('W') && size['W'] != H ? size['W'] : 0};
  if (s.value_heads() % s.H != 0)
    throw std::invalid_argument(name + ": the value heads (" + std::to_string(s.value_heads()) +
                                ") must be a multiple of the query/key heads (" + std::to_string(s.H) + ")");
  if (size.count('L') && size['L'] < s.levels())
    throw std::invalid_argument(name + ": the level dimension L must be at least ceil(log2 T) + 1 = " +
                                std::to_string(s.levels()) + " for T = " + std::to_string(s.T) +
                                " (ceil(log2(t0 + T)) + 1 after t0 earlier tokens), got " + std::to_string(size['L']));
  if (size.count('L') && size['L'] != s.levels()) return Shape{s.B, s.T, s.H, s.K, s.V, s.HV, size['L']};
  return s;
}

bool Mechanism::groups_value_heads() const {
  for (const std::vector<TensorSpec>* specs : {&inputs, &outputs})
    for (const TensorSpec& spec : *specs)
      if (spec.dims.find('W') != std::string::npos) return true;
  return false;
}

void Mechanism::check_shape(const Shape& s) const {
  s.require_positive();
  if (s.value_heads() != s.H && !groups_value_heads())
    throw std::invalid_argument("shape " + s.str() + ": " + name + " has no grouped value heads (HV must equal H)");
  for (const std::vector<TensorSpec>* specs : {&inputs, &outputs})
    for (const TensorSpec& spec : *specs) {
      std::int64_t n = 1;
      for (std::int64_t d : dims_of(spec.dims, s)) {
        if (n > kMaxTensorElements / d)
          throw std::invalid_argument("shape " + s.str() + ": " + name + " tensor '" + spec.name + "' " + spec.dims +
                                      " would hold more than 2^31 - 1 elements");
        n *= d;
      }
    }
}

const std::vector<Mechanism>& mechanisms() {
  static const std::vector<Mechanism> all = [] {
    std::vector<Mechanism> out;
    detail::register_delta_rule_mechanisms(out);
    detail::register_linear_attention_mechanisms(out);
    detail::register_gla_mechanisms(out);
    detail::register_vla_mechanisms(out);
    detail::register_hla_mechanisms(out);
    detail::register_log_linear_mechanisms(out);
    detail::register_ccq_mechanisms(out);
    for (Mechanism& m : out) detail::split_compute_over_heads(m);  // cores.h
    return out;
  }();
  return all;
}

const Mechanism& find_mechanism(std::string_view name) {
  std::string known;
  for (const Mechanism& m : mechanisms()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw std::invalid_argument("mechanism: unknown '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace larc::harness
