// One function per kernel family appends that family's kernels to the registry (registry.cu). An
// explicit list, not static registrars: objects of a static library that nothing references are
// dropped by the linker, and their registrations with them.
#pragma once

#include <vector>

#include "larc/gpu/api.h"

namespace larc::gpu::detail {

void append_delta_rule_kernels(std::vector<Kernel>& out);  // delta_rule_fused.cu: la, la-ratio, deltanet, gdn, kla, gla

}  // namespace larc::gpu::detail
