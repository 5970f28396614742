// The launch validation shared by the log-linear kernels (log_linear_fused.cu, log_linear_chunked.cu):
// the mechanisms' tensors (SPEC §4; q, k [B,T,1,K] for Mamba-2, [B,T,H,K] for GDN, which adds beta),
// no state in or out, K ≤ 128, T ≤ max_T, and level_scales with at least ⌈log2 T⌉ + 1 levels.
#pragma once

#include <bit>
#include <cstdint>

#include "validate.h"

namespace larc::gpu::detail {

// ⌈log2 T⌉ + 1 for T ≥ 1 (fenwick::level_count): the Fenwick levels log-linear attention over T tokens touches.
inline int fenwick_level_count(std::int64_t T) { return std::bit_width(static_cast<std::uint64_t>(T - 1)) + 1; }

struct LogLinearInputs {
  DType dtype{};
  const TensorView *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *beta = nullptr;  // beta: GDN only
  const TensorView *level_scales = nullptr, *o = nullptr;
  int levels = 0;  // fenwick level count of T (0 when T = 0 or the launch is refused)
};

LogLinearInputs validate_log_linear(Validator& v, const LaunchArgs& args, bool gdn, std::int64_t max_T);

}  // namespace larc::gpu::detail
