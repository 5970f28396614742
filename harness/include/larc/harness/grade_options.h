// A precision-grade declaration from the words a user writes: `larc diff --grade io --grade-of
// final_state=fp32 --grade-chunk 64` on the command line, grade=..., grade_of=[...] from Python
// (capi/). One parser, so both refuse the same mistakes with the same messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "larc/harness/grade.h"

namespace larc::harness {

// How the caller spells the two settings, for messages ("--grade" and "--grade-of" on the command line).
struct GradeOptionNames {
  std::string grade = "--grade", grade_of = "--grade-of";
};

// `grade` for every output, each "OUTPUT=GRADE" of `grade_of` for one output, `chunk` as the io
// baseline's chunk. Throws std::invalid_argument naming the setting and what it accepts. The outputs
// and the chunk are checked against a mechanism by GradeDeclaration::validate.
GradeDeclaration parse_grade_declaration(const std::string& grade, const std::vector<std::string>& grade_of,
                                         std::int64_t chunk, const GradeOptionNames& names = {});

}  // namespace larc::harness
