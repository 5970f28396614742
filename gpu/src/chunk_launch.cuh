// Host side of the chunked launchers (delta_rule_chunked.cu, log_linear_chunked.cu): their grades, shared-memory
// opt-in, the failure wording, and the stream-ordered workspace between their kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernel_common.cuh"

namespace larc::gpu::detail::chunk_launch {

// A chunked kernel's declared grade (Kernel::io_grade): fp32, or io (intermediate operands rounded to the
// input dtype; docs/gate.md "Precision grades").
enum class Grade { fp32, io };

// Opts a kernel into `bytes` of dynamic shared memory when above the default 48 KB.
template <class Kernel>
cudaError_t allow_smem(Kernel kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

// "<kernel>: launch failed (<what>): <error>", the fused launchers' wording with the step named. The
// failed call's error is also the thread's last error, which the next launch on this host thread would
// read as its own (launch_status): it is cleared here.
inline Status cuda_failure(const std::string& name, const std::string& what, cudaError_t e) {
  (void)cudaGetLastError();
  return Status::failure(name + ": launch failed (" + what + "): " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// `bytes` of device memory ordered on `stream` (cudaMallocAsync), from the device's default pool with its
// release threshold set to "never", so that the next launch reuses freed memory instead of mapping it
// again. *out = nullptr for 0 bytes.
inline Status allocate_workspace(const std::string& name, std::size_t bytes, cudaStream_t stream, float** out) {
  *out = nullptr;
  if (bytes == 0) return Status::success();
  int device = 0;
  cudaMemPool_t pool = nullptr;
  std::uint64_t keep = ~std::uint64_t{0};
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, device);
  if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  if (e != cudaSuccess) return cuda_failure(name, "workspace pool", e);
  void* allocated = nullptr;
  e = cudaMallocAsync(&allocated, bytes, stream);
  if (e != cudaSuccess) return cuda_failure(name, "workspace of " + std::to_string(bytes) + " bytes", e);
  *out = static_cast<float*>(allocated);
  return Status::success();
}

// The launches' status (read first: the free could set another error), then the workspace freed on the stream.
inline Status finish(const std::string& name, float* workspace, cudaStream_t stream) {
  const Status launched = launch_status(name);
  cudaError_t e = cudaSuccess;
  if (workspace != nullptr && (e = cudaFreeAsync(workspace, stream)) != cudaSuccess && launched)
    return cuda_failure(name, "freeing the workspace", e);
  return launched;
}

}  // namespace larc::gpu::detail::chunk_launch
