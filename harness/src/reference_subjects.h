// The reference's own low-precision forms as CPU subjects, so the whole gate runs without a GPU:
// every form of every mechanism computed in float from inputs in the case's dtype, outputs rounded
// to the output's dtype ("ref-<form>-f32").
#pragma once

#include <vector>

#include "larc/harness/subject.h"

namespace larc::harness::detail {

// Chunk size of the chunked subjects: FLA's.
inline constexpr std::int64_t kReferenceChunk = 64;

void register_reference_subjects(std::vector<Subject>& out);

// Runs `mechanism`'s reference in float in `form` on typed inputs and writes the outputs rounded to
// their dtypes: the launcher of the reference subjects (and of the same-precision baseline).
// With `draw` ≥ 1, the gates the mechanism derives from its inputs under that rounding draw
// (Mechanism::compute_rounding_draw, which it must then have).
void run_reference_in_float(const Mechanism& mechanism, ref::Form form, const TensorMap& inputs, TensorMap& outputs,
                            std::uint64_t draw = 0);
// The io grade's baseline (grade.h): the chunked form with matrix-product operands rounded to
// `operands`, chunk size `chunk`, outputs rounded to their dtypes.
void run_reference_io(const Mechanism& mechanism, ref::OperandFormat operands, std::int64_t chunk,
                      const TensorMap& inputs, TensorMap& outputs);

}  // namespace larc::harness::detail
