// Test subjects that compute a mechanism in float from its inputs as `edit` leaves them: a kernel
// that assumes something of its inputs (ignores the initial state or the scale, clamps β, ...).
#pragma once

#include <functional>
#include <string>

#include "larc/harness/subject.h"

namespace larc_test {

struct EditedSubject {
  std::string name, mechanism;
  // The mechanism whose float serial form computes the outputs from the edited inputs (empty: `mechanism`):
  // e.g. gdn for a gdn-qk-l2norm kernel that normalises q and k its own way before the recurrence.
  std::string computed_as = {};
  std::function<void(larc::harness::ValueMap&)> edit;
  bool takes_initial_state = true;
  bool takes_scale = true;
  bool value_head_groups = false;
};

// Registers it once (a second call with the same name and mechanism does nothing).
inline void register_edited(const EditedSubject& e) {
  namespace h = larc::harness;
  for (const h::Subject& s : h::subjects())
    if (s.name == e.name && s.mechanism == e.mechanism) return;
  h::Subject s;
  s.name = e.name;
  s.mechanism = e.mechanism;
  s.dtypes = {larc::ref::Dtype::bf16, larc::ref::Dtype::fp32};
  s.limits.initial_state = e.takes_initial_state;
  s.limits.scale = e.takes_scale;
  s.limits.value_head_groups = e.value_head_groups;
  s.launch = [edit = e.edit, computed_as = e.computed_as.empty() ? e.mechanism : e.computed_as](const h::TensorMap& in,
                                                                                              h::TensorMap& out) {
    h::ValueMap values = h::decode_all(in);
    edit(values);
    const h::ValueMap o = h::find_mechanism(computed_as).compute(values, h::Precision::f32, larc::ref::Form::serial, 0);
    for (auto& [n, t] : out)
      for (std::size_t i = 0; i < t.size(); ++i) t.set(i, o.at(n).data[i]);
  };
  h::register_subject(std::move(s));
}

}  // namespace larc_test
