#include "larc/harness/grade.h"

#include <stdexcept>

namespace larc::harness {

std::string_view grade_name(Grade g) {
  switch (g) {
    case Grade::fp32: return "fp32";
    case Grade::io: return "io";
    case Grade::io_tf32: return "io:tf32";
    case Grade::io_tf32_truncated: return "io:tf32-truncated";
  }
  return "?";
}

Grade parse_grade(std::string_view name, std::string_view what) {
  for (Grade g : {Grade::fp32, Grade::io, Grade::io_tf32, Grade::io_tf32_truncated})
    if (grade_name(g) == name) return g;
  throw std::invalid_argument(std::string(what) + ": unknown grade '" + std::string(name) +
                              "' (accepted: fp32, io, io:tf32, io:tf32-truncated)");
}

std::vector<Grade> relaxed_grades_for(Dtype d) {
  if (d == Dtype::fp32) return {Grade::io_tf32, Grade::io_tf32_truncated};
  return {Grade::io};
}

Grade effective_grade(Grade declared, Dtype d) {
  if (declared == Grade::fp32) return Grade::fp32;
  if (d != Dtype::fp32) return Grade::io;
  return declared == Grade::io ? Grade::fp32 : declared;
}

ref::OperandFormat io_operand_format(Grade g, Dtype d) {
  switch (d) {
    case Dtype::bf16: return ref::OperandFormat::bf16;
    case Dtype::fp16: return ref::OperandFormat::fp16;
    case Dtype::fp32:
      if (g == Grade::io_tf32) return ref::OperandFormat::tf32;
      if (g == Grade::io_tf32_truncated) return ref::OperandFormat::tf32_truncated;
      break;
    default: break;
  }
  throw std::invalid_argument("grade: no " + std::string(grade_name(g)) + " baseline for inputs in " +
                              std::string(ref::dtype_name(d)));
}

Grade GradeDeclaration::of(std::string_view output) const {
  const auto it = outputs.find(output);
  return it == outputs.end() ? grade : it->second;
}

bool GradeDeclaration::any_relaxed() const {
  if (grade != Grade::fp32) return true;
  for (const auto& [name, g] : outputs)
    if (g != Grade::fp32) return true;
  return false;
}

void GradeDeclaration::validate(const Mechanism& m) const {
  if (chunk < 1) throw std::invalid_argument("grade: chunk must be at least 1, got " + std::to_string(chunk));
  for (const auto& [name, g] : outputs) {
    bool known = false;
    std::string names;
    for (const TensorSpec& o : m.outputs) {
      known = known || o.name == name;
      names += (names.empty() ? "" : ", ") + o.name;
    }
    if (!known)
      throw std::invalid_argument("grade of output '" + name + "': " + m.name + " has no such output (its outputs: " + names + ")");
  }
  if (any_relaxed() && !m.compute_io)
    throw std::invalid_argument("grade: " + m.name +
                                " has no io form (no chunked form), so it can only be judged at fp32");
}

}  // namespace larc::harness
