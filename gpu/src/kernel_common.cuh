// Device-side pieces every kernel shares: dtype conversion to and from fp32, 64-bit strided indexing
// of [B,T,H,D]-style tensors, and the host-side dispatch from a runtime Dtype to a template.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "device_syntax.cuh"
#include "larc/gpu/api.h"
#include "validate.h"

namespace larc::gpu::detail {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

// e^x rounded once to fp32 (through fp64): CUDA's expf may be 2 ulp off, and a decay's error compounds
// over every step a long memory keeps (with expf the H200 gate's fp32 GLA, CCQ-GLA and log-linear cases
// with decays near 1 exceeded the k = 2 tolerance: docs/perf-notes.md, "Decays rounded once"). The CPU baselines' std::exp is
// correctly rounded in float; this matches it except in rare double-rounding ties. Once per token and
// channel, never in the state loop.
__device__ __forceinline__ float exp_rounded_once(float x) { return static_cast<float>(exp(static_cast<double>(x))); }
// The same from an fp64 exponent, for a sum of log-decays kept in fp64: rounding such a sum G to fp32
// first would cost |G|·2^-24 of relative accuracy in e^G (a decayed gradient at G ≈ −50: 3e-6).
__device__ __forceinline__ float exp_rounded_once(double x) { return static_cast<float>(exp(x)); }

// The feature map φ(x) = ELU(x) + 1 of ratio linear attention and VLA.
__device__ __forceinline__ float elu_plus_one(float x) { return x > 0.f ? x + 1.f : exp_rounded_once(x); }

// `words` (a multiple of 4; both addresses 16-byte aligned) from global to shared memory by cp.async,
// shared by the block's THREADS threads.
template <int THREADS>
__device__ __forceinline__ void copy_words_async(float* dst, const float* src, int words) {
  for (int e = threadIdx.x; e < words / 4; e += THREADS) copy_async16(dst + 4 * e, src + 4 * e);
}

// A validated tensor as a kernel argument: base pointer and the strides (elements) of its first four
// dimensions; offsets are 64-bit so tensors past 2^31 elements index correctly.
template <typename T>
struct Strided {
  T* data = nullptr;
  std::int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  __host__ __device__ T* at(std::int64_t i0, std::int64_t i1 = 0, std::int64_t i2 = 0, std::int64_t i3 = 0) const {
    return data + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3;
  }
};

// nullptr view (an optional tensor that is absent) gives data == nullptr.
template <typename T>
Strided<T> strided(const TensorView* t) {
  Strided<T> out;
  if (t == nullptr) return out;
  const Strides s = Validator::strides_of(*t);
  out.data = static_cast<T*>(t->data);
  out.s0 = s.s[0];
  out.s1 = s.s[1];
  out.s2 = s.s[2];
  out.s3 = s.s[3];
  return out;
}

// Calls f(T{}) with T the C++ type of a floating dtype (bf16, fp16, fp32).
template <typename F>
auto dispatch_float(Dtype d, F&& f) {
  switch (d) {
    case Dtype::bf16: return f(__nv_bfloat16{});
    case Dtype::fp16: return f(__half{});
    default: return f(float{});
  }
}

// Calls f(T{}) with T the C++ type of a half-width dtype (bf16; anything else fp16): for a kernel whose
// validation admits only those two, so that no fp32 instantiation is compiled.
template <typename F>
auto dispatch_half(Dtype d, F&& f) {
  return d == Dtype::bf16 ? f(__nv_bfloat16{}) : f(__half{});
}

// The status of the launch just enqueued (launch-configuration errors such as too much shared memory).
inline Status launch_status(const std::string& kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::success();
  return Status::failure(kernel + ": launch failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

inline cudaStream_t stream_of(const LaunchArgs& args) { return static_cast<cudaStream_t>(args.stream); }

}  // namespace larc::gpu::detail
