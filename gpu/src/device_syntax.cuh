// The only device-specific syntax of the kernels: the triple-chevron launch, dynamic shared memory, and
// the inline PTX (the m16n8k16 bf16 MMA, cp.async, an L2 prefetch). Under nvcc they are what they say.
// Under a host C++ compiler the same names come from the host emulation (gpu/emulation: every block's
// threads as host threads, the warp-collective instructions modelled), which runs the kernels on a
// machine without a GPU; nothing else in gpu/src differs between the two builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#if defined(__CUDACC__)

#include <cuda_runtime.h>

namespace larc::gpu::detail {

// launch_kernel(kernel, grid, block, smem, stream, args...): the launch every launcher goes through.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, Args&&... args) {
  kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
}

// The block's dynamic shared memory (the launch's `smem` bytes), 16-byte aligned.
template <class T>
__device__ __forceinline__ T* dynamic_shared() {
  extern __shared__ float4 larc_dynamic_shared[];
  return reinterpret_cast<T*>(larc_dynamic_shared);
}

// d += A · B for one m16n8k16 block: bf16 A (row) and B (col) fragments, fp32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16 bytes from global to shared memory, asynchronously (cp.async); visible after commit_async and
// wait_async<N> with at most N later groups pending, then a barrier.
__device__ __forceinline__ void copy_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(dst))),
               "l"(src)
               : "memory");
}
__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Asks L2 to fetch the line holding p, a valid global address (a hint: no fault, no result).
template <class T>
__device__ __forceinline__ void prefetch_l2(const T* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

}  // namespace larc::gpu::detail

#else

#include "larc_device_emulation.h"  // gpu/emulation/include: the same names, run on the host

#endif
