// Precision grades (DESIGN.md "Tolerance policy"; docs/gate.md "Precision grades"): the contract a
// kernel declares per output. `fp32` (the default) judges against the reference computed in float
// from the dtype-rounded inputs. `io` adds the reference's chunked form with every operand of every
// matrix product rounded to the input dtype and float accumulation (what a kernel whose
// intermediates are bf16/fp16 promises); `io:tf32` the same with TF32 operands rounded to nearest,
// for fp32-input kernels on TF32 tensor cores fed converted operands (cuBLAS, CUTLASS), and
// `io:tf32-truncated` with the operands truncated to TF32, for kernels that feed fp32 registers to
// the tensor cores unconverted (Triton's default). Everything grade-independent (poison, guards, NaN, determinism, the
// per-timestep and window criteria, oracle certification, the output dtype's own floor) is the same
// at every grade: a grade only adds a baseline.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "larc/harness/mechanism.h"
#include "larc/reference/matmul_operands.h"

namespace larc::harness {

enum class Grade { fp32, io, io_tf32, io_tf32_truncated };

std::string_view grade_name(Grade g);  // "fp32", "io", "io:tf32", "io:tf32-truncated"
// Throws std::invalid_argument naming `what` (e.g. "--grade") and the accepted names.
Grade parse_grade(std::string_view name, std::string_view what = "grade");

// The io-family grades a case in dtype `d` is judged at besides fp32, strictest first: io for
// bf16/fp16 inputs (the operands are the input dtype); io:tf32 then io:tf32-truncated for fp32 inputs
// (plain io with fp32 operands is fp32).
std::vector<Grade> relaxed_grades_for(Dtype d);
// The grade an output declared `declared` is judged at for inputs in dtype `d`: io on fp32 inputs is
// fp32, and either TF32 grade on bf16/fp16 inputs is io; otherwise the declared grade.
Grade effective_grade(Grade declared, Dtype d);
// The operand format of the io baseline of grade `g` (one of relaxed_grades_for(d)) on inputs in
// dtype `d`: bf16, fp16, tf32 or tf32_truncated.
ref::OperandFormat io_operand_format(Grade g, Dtype d);

// What a subject (or `larc diff --grade`) declares: a grade for every output, overridden per output,
// and the chunk size its arithmetic uses (the io baseline's chunk).
struct GradeDeclaration {
  Grade grade = Grade::fp32;
  std::map<std::string, Grade, std::less<>> outputs{};
  std::int64_t chunk = 64;

  Grade of(std::string_view output) const;
  bool any_relaxed() const;  // some output declares io or io:tf32
  // Throws std::invalid_argument naming the problem: an output `m` does not have, a chunk below 1, or
  // an io grade on a mechanism without an io form (no chunked form).
  void validate(const Mechanism& m) const;
};

}  // namespace larc::harness
