// Seeded uniform fills of device tensors (api.h fill_uniform): benchmark inputs made on the device,
// without host generation or transfers. A counter-based hash (SplitMix64) of (seed, index) gives
// each element, so the result does not depend on the launch geometry.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernel_common.cuh"

namespace larc::gpu {

namespace {

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void fill_uniform_kernel(T* out, std::int64_t n, float lo, float hi, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float u = static_cast<float>(splitmix64(seed ^ static_cast<std::uint64_t>(i)) >> 40) * 0x1.0p-24f;
    out[i] = detail::from_float<T>(lo + (hi - lo) * u);
  }
}

}  // namespace

Status fill_uniform(const TensorView& t, float lo, float hi, std::uint64_t seed, void* stream) {
  if (t.dtype != Dtype::bf16 && t.dtype != Dtype::fp16 && t.dtype != Dtype::fp32)
    return Status::failure("fill_uniform: dtype " + std::string(dtype_name(t.dtype)) + " is not a float dtype");
  if (!t.strides.empty() && t.strides != TensorView{nullptr, t.dtype, t.shape, {}}.effective_strides())
    return Status::failure("fill_uniform: the tensor must be contiguous");
  const std::int64_t n = t.numel();
  if (n == 0) return Status::success();
  if (t.data == nullptr) return Status::failure("fill_uniform: null data pointer");
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65536));
  detail::dispatch_float(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    detail::launch_kernel(fill_uniform_kernel<T>, blocks, 256, 0, static_cast<cudaStream_t>(stream), static_cast<T*>(t.data), n,
                          lo, hi, seed);
  });
  return detail::launch_status("fill_uniform");
}

}  // namespace larc::gpu
