// Sections 3, 4 and 5 of `larc report`: the VLA paper's figures reproduced at the memory level, from
// the same computations as the claims (larc/properties/vla_memory.h, larc/properties/vla_jacobian.h).
#pragma once

#include "section.h"

namespace larc::report {

Section state_norm_section(const ReportContext& ctx);  // 3: ‖S_t‖_F versus t (VLA-C3, C7)
Section jacobian_section(const ReportContext& ctx);    // 4: ‖J_t‖₂ against c = k̂·α̂ (VLA-C1)
Section recall_section(const ReportContext& ctx);      // 5: recall versus pairs and versus T (VLA-C8)

}  // namespace larc::report
