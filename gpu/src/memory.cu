// Device memory, copies, synchronisation and event timing for host programs (api.h).
#include <cuda_runtime.h>

#include <mutex>
#include <string>
#include <utility>

#include "capture_lock.h"
#include "larc/gpu/api.h"

namespace larc::gpu {

namespace detail {
std::shared_mutex& capture_mutex() {
  static std::shared_mutex m;
  return m;
}
}  // namespace detail

namespace {
// Held by every device-wide call below: none runs while a graph is being captured (capture_lock.h).
std::shared_lock<std::shared_mutex> no_capture() { return std::shared_lock(detail::capture_mutex()); }

void release(void* p) {
  const auto lock = no_capture();
  cudaFree(p);
}

Status check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::success();
  cudaGetLastError();
  return Status::failure(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}
}  // namespace

DeviceBuffer DeviceBuffer::allocate(std::size_t bytes, Status& status) {
  DeviceBuffer b;
  if (bytes == 0) {
    status = Status::success();
    return b;
  }
  void* p = nullptr;
  const auto lock = no_capture();
  status = check(cudaMalloc(&p, bytes), ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
  if (status) {
    b.ptr_ = p;
    b.bytes_ = bytes;
  }
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) release(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) release(ptr_);
}

Status copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return Status::success();
  const auto lock = no_capture();
  return check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to device");
}

Status copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return Status::success();
  const auto lock = no_capture();
  return check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy to host");
}

Status fill_device(void* dst, unsigned char byte, std::size_t bytes) {
  if (bytes == 0) return Status::success();
  const auto lock = no_capture();
  return check(cudaMemset(dst, byte, bytes), "cudaMemset");
}

Status use_device(int index) { return check(cudaSetDevice(index), ("cudaSetDevice(" + std::to_string(index) + ")").c_str()); }

Status synchronize() {
  const auto lock = no_capture();
  return check(cudaDeviceSynchronize(), "kernel execution");
}

Status time_on_stream(const std::function<Status()>& enqueue, void* stream, int warmup, int iterations, float* ms) {
  const auto s = static_cast<cudaStream_t>(stream);
  for (int i = 0; i < warmup; ++i)
    if (Status st = enqueue(); !st) return st;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (Status st = check(cudaEventCreate(&start), "cudaEventCreate"); !st) return st;
  if (Status st = check(cudaEventCreate(&stop), "cudaEventCreate"); !st) {
    cudaEventDestroy(start);
    return st;
  }
  Status st = check(cudaEventRecord(start, s), "cudaEventRecord");
  for (int i = 0; st && i < iterations; ++i) st = enqueue();
  if (st) st = check(cudaEventRecord(stop, s), "cudaEventRecord");
  if (st) st = check(cudaEventSynchronize(stop), "kernel execution");
  float total = 0;
  if (st) st = check(cudaEventElapsedTime(&total, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (st) *ms = total / static_cast<float>(iterations > 0 ? iterations : 1);
  return st;
}

}  // namespace larc::gpu
