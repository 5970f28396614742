#include "larc/harness/grade_options.h"

#include <stdexcept>

namespace larc::harness {

GradeDeclaration parse_grade_declaration(const std::string& grade, const std::vector<std::string>& grade_of,
                                         std::int64_t chunk, const GradeOptionNames& names) {
  GradeDeclaration d;
  d.grade = parse_grade(grade, names.grade);
  d.chunk = chunk;
  for (const std::string& item : grade_of) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument(names.grade_of + ": expected OUTPUT=GRADE (e.g. final_state=io), got '" + item + "'");
    d.outputs[item.substr(0, eq)] = parse_grade(item.substr(eq + 1), names.grade_of + " " + item.substr(0, eq));
  }
  return d;
}

}  // namespace larc::harness
