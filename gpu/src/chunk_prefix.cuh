// The exclusive prefix over chunks, elementwise and in place, that turns per-chunk parts into chunk-start
// sums: chunked HLA/AHLA's first and cross sums (hla_chunked.cuh) and chunked VLA's Gram sums and ζ
// (vla_chunked.cuh). A group (a sequence and head) holds its chunks' records one after the other, each
// `record` vectors long, of which the first `width` are summed:
//   x_c ← Σ_{c' < c} x_c'   for c in order, per vector element.
// (Templates: every unit that launches them gets the same device code, merged at link time.)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "chunk_operands.cuh"  // kBlockThreads, every chunked kernel's block

namespace larc::gpu::detail::chunk_prefix {

using chunk_operands::kBlockThreads;
constexpr int kBatch = 8;  // chunks whose loads run ahead of the running sum

__device__ __forceinline__ float4 plus(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
__device__ __forceinline__ double2 plus(double2 a, double2 b) { return make_double2(a.x + b.x, a.y + b.y); }

// Thread e owns vector e % width of group e / width.
template <class Vec>
__global__ void __launch_bounds__(kBlockThreads) exclusive_prefix(Vec* x, std::int64_t chunks, std::int64_t width,
                                                                  std::int64_t record, std::int64_t groups) {
  const std::int64_t e = std::int64_t{blockIdx.x} * kBlockThreads + threadIdx.x;
  if (e >= groups * width) return;
  Vec* const base = x + e / width * chunks * record + e % width;
  Vec run{};
  for (std::int64_t c0 = 0; c0 < chunks; c0 += kBatch) {
    Vec batch[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i)
      if (c0 + i < chunks) batch[i] = base[(c0 + i) * record];
#pragma unroll
    for (int i = 0; i < kBatch; ++i)
      if (c0 + i < chunks) {
        base[(c0 + i) * record] = run;
        run = plus(run, batch[i]);
      }
  }
}

// The blocks exclusive_prefix takes for `groups` × `width` vectors (what a launcher's grid check counts).
inline std::int64_t blocks(std::int64_t groups, std::int64_t width) { return (groups * width + kBlockThreads - 1) / kBlockThreads; }

template <class Vec>
void enqueue(Vec* x, std::int64_t chunks, std::int64_t width, std::int64_t record, std::int64_t groups, cudaStream_t stream) {
  launch_kernel(exclusive_prefix<Vec>, static_cast<unsigned>(blocks(groups, width)), kBlockThreads, 0, stream, x, chunks, width, record, groups);
}

}  // namespace larc::gpu::detail::chunk_prefix
