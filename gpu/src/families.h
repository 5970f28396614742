// One function per kernel family appends that family's kernels to the registry (registry.cu). An
// explicit list, not static registrars: objects of a static library that nothing references are
// dropped by the linker, and their registrations with them.
#pragma once

#include <vector>

#include "larc/gpu/api.h"

namespace larc::gpu::detail {

void append_delta_rule_kernels(std::vector<Kernel>& out);  // delta_rule_fused.cu: la, la-ratio, deltanet, gdn, kla, gla
void append_log_linear_kernels(std::vector<Kernel>& out);  // log_linear_fused.cu: log-linear, log-linear-gdn
void append_hla_kernels(std::vector<Kernel>& out);  // hla_fused.cu: hla, hla-normalized, ahla
void append_vla_kernels(std::vector<Kernel>& out);  // vla_fused.cu: vla
void append_ccq_kernels(std::vector<Kernel>& out);  // ccq_fused.cu: ccq-gla, ccq-gdn
void append_delta_rule_chunked_kernels(std::vector<Kernel>& out);  // delta_rule_chunked.cu: gdn-chunked, kla-chunked
void append_log_linear_chunked_kernels(std::vector<Kernel>& out);  // log_linear_chunked.cu: log-linear-chunked

}  // namespace larc::gpu::detail
