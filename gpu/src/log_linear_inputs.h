// The launch validation shared by the log-linear kernels (log_linear_fused.cu, log_linear_chunked.cu,
// log_linear_gdn_chunked.cu, log_linear_fused_backward.cu): the mechanisms' tensors (SPEC §4; q, k
// [B,T,1,K] for Mamba-2, [B,T,H,K] for GDN, which adds beta), no state in or out, K ≤ 128, T ≤ max_T,
// and level_scales with at least ⌈log2 T⌉ + 1 levels; for the gradient twins, do instead of the output o
// and the gradients as outputs.
#pragma once

#include <bit>
#include <cstdint>

#include "validate.h"

namespace larc::gpu::detail {

// ⌈log2 T⌉ + 1 for T ≥ 1 (fenwick::level_count): the Fenwick levels log-linear attention over T tokens touches.
inline int fenwick_level_count(std::int64_t T) { return std::bit_width(static_cast<std::uint64_t>(T - 1)) + 1; }

struct LogLinearInputs {
  Dtype dtype{};
  const TensorView *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *beta = nullptr;  // beta: GDN only
  const TensorView *level_scales = nullptr, *o = nullptr;
  int levels = 0;  // fenwick level count of T (0 when T = 0 or the launch is refused)
  // The gradient twins' (o is then null): the cotangent do [B,T,H,V] and the gradients dq, dk (q's dims),
  // dv [B,T,H,V], dg [B,T,H], dlevel_scales [B,T,H,L], dbeta [B,T,H] (GDN) in the inputs' dtype, and the
  // optional fp32 dinitial_level_states [B,H,L,K,V] (zero: the kernels take no start, so no slot holds a
  // carried bucket).
  const TensorView *d_o = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr, *dg = nullptr;
  const TensorView *dlevel_scales = nullptr, *dbeta = nullptr, *dinitial_level_states = nullptr;
};

enum class LogLinearPass { forward, gradients };

LogLinearInputs validate_log_linear(Validator& v, const LaunchArgs& args, bool gdn, std::int64_t max_T,
                                    LogLinearPass pass = LogLinearPass::forward);

// The geometry of the chunked kernels (log_linear_chunked.cu, log_linear_gdn_chunked.cu; 64-token chunks):
// the chunks of a sequence, the chunk levels m = 1 … bit_width(chunks − 1) they reach, and the column tiles
// of a level pass of `level_tile` and an output of `out_tile` value columns; their largest grid is
// required on v (B · H · tiles and B · H · chunks · tiles blocks).
constexpr int kLogLinearChunk = 64;
struct LogLinearChunking {
  std::int64_t chunks = 0, level_tiles = 0, out_tiles = 0;
  int chunk_levels = 0;
};
LogLinearChunking chunking_of(Validator& v, int level_tile, int out_tile);

}  // namespace larc::gpu::detail
