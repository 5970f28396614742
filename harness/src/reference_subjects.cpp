#include "reference_subjects.h"

#include <stdexcept>
#include <string>

namespace larc::harness::detail {

namespace {
// Writes float64 values into the outputs, each rounded to its tensor's dtype.
void write_rounded(const Mechanism& m, const ValueMap& values, TensorMap& outputs) {
  for (auto& [name, out] : outputs) {
    const ref::Tensor<double>& v = values.at(name);
    if (v.shape != out.shape())
      throw std::logic_error(m.name + ": output '" + name + "' has shape " + ref::shape_string(v.shape) + ", expected " +
                             ref::shape_string(out.shape()));
    for (std::size_t i = 0; i < out.size(); ++i) out.set(i, v.data[i]);
  }
}
}  // namespace

void run_reference_in_float(const Mechanism& m, ref::Form form, const TensorMap& inputs, TensorMap& outputs,
                            std::uint64_t draw) {
  if (draw == 0) return write_rounded(m, m.compute(decode_all(inputs), Precision::f32, form, kReferenceChunk), outputs);
  if (!m.compute_rounding_draw) throw std::invalid_argument(m.name + " takes no rounding draws");
  write_rounded(m, m.compute_rounding_draw(decode_all(inputs), form, kReferenceChunk, draw), outputs);
}

void run_reference_io(const Mechanism& m, ref::OperandFormat operands, std::int64_t chunk, const TensorMap& inputs,
                      TensorMap& outputs) {
  if (!m.compute_io) throw std::invalid_argument(m.name + " has no io form (no chunked form)");
  write_rounded(m, m.compute_io(decode_all(inputs), operands, chunk), outputs);
}

void register_reference_subjects(std::vector<Subject>& out) {
  for (const Mechanism& m : mechanisms())
    for (ref::Form form : m.forms)
      if (form != ref::Form::materialized) out.push_back(reference_float_subject(m, form));  // O(T²): a definition
}

}  // namespace larc::harness::detail

namespace larc::harness {

Subject reference_float_subject(const Mechanism& m, ref::Form form, std::uint64_t draw) {
  if (draw > 0 && !m.compute_rounding_draw) throw std::invalid_argument(m.name + " takes no rounding draws");
  Subject s;
  s.name = "ref-" + std::string(ref::form_name(form)) + "-f32" + (draw > 0 ? "-draw" + std::to_string(draw) : "");
  s.mechanism = m.name;
  s.dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
  s.limits.value_head_groups = true;
  s.limits.ragged = true;
  if (form == ref::Form::chunked) s.limits.chunk = detail::kReferenceChunk;
  s.description = "reference " + std::string(ref::form_name(form)) + " form in float (CPU)" +
                  (draw > 0 ? ", derived gates under rounding draw " + std::to_string(draw) : "");
  s.launch = [&m, form, draw](const TensorMap& in, TensorMap& o) { detail::run_reference_in_float(m, form, in, o, draw); };
  return s;
}

}  // namespace larc::harness
