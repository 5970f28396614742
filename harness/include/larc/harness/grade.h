// Precision grades (DESIGN.md "Tolerance policy"; docs/gate.md "Precision grades"): the contract a
// kernel declares per output. `fp32` (the default) judges against the reference computed in float
// from the dtype-rounded inputs. `io` adds the reference's chunked form with every operand of every
// matrix product rounded to the input dtype and float accumulation (what a kernel whose
// intermediates are bf16/fp16 promises); `io:tf32` the same with TF32 operands, for fp32-input
// kernels on TF32 tensor cores. Everything grade-independent (poison, guards, NaN, determinism, the
// per-timestep and window criteria, oracle certification, the output dtype's own floor) is the same
// at every grade: a grade only adds a baseline.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "larc/harness/mechanism.h"
#include "larc/reference/matmul_operands.h"

namespace larc::harness {

enum class Grade { fp32, io, io_tf32 };

std::string_view grade_name(Grade g);  // "fp32", "io", "io:tf32"
// Throws std::invalid_argument naming `what` (e.g. "--grade") and the accepted names.
Grade parse_grade(std::string_view name, std::string_view what = "grade");

// The grade the io-family baseline of a case in dtype `d` stands for: io for bf16/fp16 inputs (the
// operands are the input dtype), io:tf32 for fp32 inputs (plain io with fp32 operands is fp32).
Grade relaxed_grade_for(Dtype d);
// The grade an output declared `declared` is judged at for inputs in dtype `d`: fp32, or
// relaxed_grade_for(d) (io on fp32 inputs is fp32; io:tf32 on bf16 inputs is io).
Grade effective_grade(Grade declared, Dtype d);
// The operand format of relaxed_grade_for(d)'s baseline: bf16, fp16 or tf32.
ref::OperandFormat io_operand_format(Dtype d);

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
