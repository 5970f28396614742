// The device side of the host emulation: what device_syntax.cuh names under nvcc (the launch, dynamic
// shared memory, the m16n8k16 bf16 MMA, cp.async, the L2 prefetch) and the device built-ins gpu/src
// calls (barriers, warp shuffles, bit tricks), as host code. A block's threads are fibers on the
// launching host thread (device_emulation.cpp): a barrier waits for every thread of the block that has not
// returned, a warp shuffle for the warp's 32 lanes (the full mask only: every shuffle in gpu/src is), an
// MMA gathers the warp's fragments.
//
// Arithmetic: fp32 operations are the host's, correctly rounded as the device's are, but nvcc contracts
// a·b + c into one FMA where it can and the emulation (built with -ffp-contract=off) fuses only what is
// written as fmaf; so sums of products differ from a device's in the last bits. The MMA
// is a model: the exact sum of the 16 bf16 products and the accumulator, rounded once to fp32, toward
// zero (what the tensor cores' truncating accumulation is closest to) or, with the environment
// variable LARC_EMULATION_MMA=nearest, to nearest. So results can differ from an H200's in the last
// bits of each MMA; the emulation checks a kernel's logic and indexing and its accuracy to within that.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_runtime.h"

namespace larc::gpu::emulation {

void block_barrier();
// Lane `lane`'s slot of 64 bytes in the calling thread's warp's exchange area, and that warp's barrier.
void* lane_slot(int lane);
void warp_barrier();
int lane_id();
void* dynamic_shared_base();
// d += A · B over one m16n8k16 block, the warp's fragments in PTX's layout (the model above).
void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1);
void require_full_mask(unsigned mask, const char* what);

// The value lane `source` holds, for every lane of the warp: two barriers around one exchange.
template <class T>
T shuffle(T x, int source) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 64);
  std::memcpy(lane_slot(lane_id()), &x, sizeof(T));
  warp_barrier();
  T out;
  std::memcpy(&out, lane_slot(source), sizeof(T));
  warp_barrier();
  return out;
}

}  // namespace larc::gpu::emulation

inline void __syncthreads() { larc::gpu::emulation::block_barrier(); }

template <class T>
T __shfl_xor_sync(unsigned mask, T x, int lane_mask, int width = 32) {
  larc::gpu::emulation::require_full_mask(mask, "__shfl_xor_sync");
  const int lane = larc::gpu::emulation::lane_id(), source = lane ^ lane_mask;
  return larc::gpu::emulation::shuffle(x, source / width == lane / width ? source : lane);
}
template <class T>
T __shfl_sync(unsigned mask, T x, int source_lane, int width = 32) {
  larc::gpu::emulation::require_full_mask(mask, "__shfl_sync");
  const int lane = larc::gpu::emulation::lane_id();
  return larc::gpu::emulation::shuffle(x, lane / width * width + source_lane % width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T x, unsigned delta, int width = 32) {
  larc::gpu::emulation::require_full_mask(mask, "__shfl_down_sync");
  const int lane = larc::gpu::emulation::lane_id();
  return larc::gpu::emulation::shuffle(x, lane % width + static_cast<int>(delta) < width ? lane + static_cast<int>(delta) : lane);
}

inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
using std::isinf;
// The device's integer and float min/max (global functions in CUDA).
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a < b ? b : a; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }

namespace larc::gpu::detail {

// kernel<<<grid, block, smem, stream>>>(args...), run on the host (cuda_runtime.h's emulation::launch).
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, Args&&... args) {
  emulation::launch_kernel(kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

template <class T>
inline T* dynamic_shared() {
  return static_cast<T*>(emulation::dynamic_shared_base());
}

inline void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  emulation::mma_m16n8k16_bf16(d, a, b0, b1);
}

// cp.async completes at once here: a kernel that read the words before its wait would not be caught.
inline void copy_async16(void* dst, const void* src) { std::memcpy(dst, src, 16); }
inline void commit_async() {}
template <int N>
inline void wait_async() {}

template <class T>
inline void prefetch_l2(const T*) {}

}  // namespace larc::gpu::detail
