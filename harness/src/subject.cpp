#include "larc/harness/subject.h"

#include <algorithm>
#include <stdexcept>

#include "gpu_subjects.h"
#include "reference_subjects.h"

namespace larc::harness {

bool limits_accept(const ShapeLimits& l, const Shape& s) {
  auto within = [](std::int64_t x, std::int64_t max) { return max == 0 || x <= max; };
  auto dim_ok = [&](std::int64_t d) {
    return l.head_dims.empty() || std::find(l.head_dims.begin(), l.head_dims.end(), d) != l.head_dims.end();
  };
  return within(s.B, l.max_B) && within(s.T, l.max_T) && within(s.H, l.max_H) && within(s.K, l.max_K) &&
         s.K >= l.min_K && within(s.V, l.max_V) && dim_ok(s.K) && dim_ok(s.V) &&
         (l.value_head_groups || s.value_heads() == s.H);
}

std::string describe_limits(const ShapeLimits& l) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  auto at_most = [&](const char* name, std::int64_t max) {
    if (max > 0) add(std::string(name) + " ≤ " + std::to_string(max));
  };
  at_most("B", l.max_B);
  at_most("T", l.max_T);
  at_most("H", l.max_H);
  if (l.min_K > 1 && l.max_K > 0)
    add(std::to_string(l.min_K) + " ≤ K ≤ " + std::to_string(l.max_K));
  else if (l.min_K > 1)
    add("K ≥ " + std::to_string(l.min_K));
  else
    at_most("K", l.max_K);
  at_most("V", l.max_V);
  if (!l.head_dims.empty()) {
    std::string dims;
    for (std::int64_t d : l.head_dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    add("K and V in {" + dims + "}");
  }
  return out.empty() ? "any shape" : out;
}

std::vector<std::string> Subject::knobs_held_at_default() const {
  std::vector<std::string> held;
  if (!limits.initial_state) held.emplace_back(kInitialStateKnob);
  if (!limits.scale) held.emplace_back(kScaleFactorKnob);
  if (!limits.ragged) held.emplace_back(kVarlenKnob);
  return held;
}

bool Subject::takes(const KnobValues& knobs) const {
  const Mechanism& m = find_mechanism(mechanism);
  for (const std::string& name : knobs_held_at_default())
    for (const Knob& k : m.knobs)
      if (k.name == name && knobs.count(name) && knobs.at(name) != k.default_value) return false;
  return true;
}

bool Subject::supports(Dtype d) const { return std::find(dtypes.begin(), dtypes.end(), d) != dtypes.end(); }

namespace {
std::vector<Subject>& registry() {
  static std::vector<Subject> all = [] {
    std::vector<Subject> out;
    detail::register_reference_subjects(out);
    detail::register_gpu_subjects(out);
    return out;
  }();
  return all;
}
}  // namespace

void register_subject(Subject s) {
  if (s.name.empty()) throw std::invalid_argument("register_subject: name must not be empty");
  const Mechanism& m = find_mechanism(s.mechanism);  // throws naming the known mechanisms
  if (s.dtypes.empty()) throw std::invalid_argument("register_subject: " + s.name + ": dtypes must not be empty");
  if (!s.launch) throw std::invalid_argument("register_subject: " + s.name + ": launch must be set");
  try {
    s.grades.validate(m);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("register_subject: " + s.name + ": " + e.what());
  }
  for (const Subject& x : registry())
    if (x.name == s.name && x.mechanism == s.mechanism)
      throw std::invalid_argument("register_subject: '" + s.name + "' is already registered for " + s.mechanism);
  registry().push_back(std::move(s));
}

const std::vector<Subject>& subjects() { return registry(); }

std::string assign_gpu_to_shard(std::uint64_t shard_index) {
  return detail::assign_gpu_to_shard(shard_index);
}

const Subject& find_subject(std::string_view name, std::string_view mechanism) {
  std::string known;
  for (const Subject& s : subjects()) {
    if (s.name == name && s.mechanism == mechanism) return s;
    if (s.mechanism == mechanism) known += (known.empty() ? "" : ", ") + s.name;
  }
  throw std::invalid_argument("subject: no '" + std::string(name) + "' for mechanism '" + std::string(mechanism) +
                              "' (its subjects: " + known + ")");
}

}  // namespace larc::harness
