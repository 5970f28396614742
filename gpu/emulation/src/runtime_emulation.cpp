// The host emulation's CUDA runtime (cuda_runtime.h): one device, "larc host emulation (sm_90a)", where
// LARC_EMULATE_GPU=1; device memory from the host's allocator; streams are the calling thread, so every
// call completes before it returns; a captured stream's launches become a graph, replayed in order by
// cudaGraphLaunch.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "emulation_state.h"

struct CUstream_st {
  bool capturing = false;
  std::vector<std::function<cudaError_t()>> recorded;
};
struct CUgraph_st {
  std::vector<std::function<cudaError_t()>> launches;
};
struct CUgraphExec_st {
  std::vector<std::function<cudaError_t()>> launches;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
};
struct CUmemPoolHandle_st {};

namespace larc::gpu::emulation {

namespace {
thread_local cudaError_t t_last_error = cudaSuccess;
}  // namespace

bool device_present() {
  static const bool present = [] {
    const char* wanted = std::getenv("LARC_EMULATE_GPU");
    return wanted != nullptr && std::strcmp(wanted, "1") == 0;
  }();
  return present;
}

cudaError_t set_last_error(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

bool record_if_capturing(cudaStream_t stream, std::function<cudaError_t()> replay) {
  if (stream == nullptr || !stream->capturing) return false;
  stream->recorded.push_back(std::move(replay));
  return true;
}

}  // namespace larc::gpu::emulation

using larc::gpu::emulation::device_present;
using larc::gpu::emulation::set_last_error;

namespace {
constexpr std::size_t kAlignment = 256;  // cudaMalloc's
}  // namespace

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (this build emulates one when LARC_EMULATE_GPU=1)";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() { return std::exchange(larc::gpu::emulation::t_last_error, cudaSuccess); }

// One device where LARC_EMULATE_GPU=1, none otherwise: a build without CUDA runs no kernel unless asked.
cudaError_t cudaGetDeviceCount(int* count) {
  *count = device_present() ? 1 : 0;
  return *count == 1 ? cudaSuccess : set_last_error(cudaErrorNoDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  if (device != 0) return set_last_error(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::strncpy(prop->name, "larc host emulation (sm_90a)", sizeof prop->name - 1);
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->sharedMemPerBlockOptin = 227 * 1024;
  prop->totalGlobalMem = std::size_t{1} << 37;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  return device == 0 ? cudaSuccess : set_last_error(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  *p = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  return *p != nullptr || bytes == 0 ? cudaSuccess : set_last_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* dst, int byte, std::size_t bytes) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  std::memset(dst, byte, bytes);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  static CUmemPoolHandle_st the_pool;
  *pool = &the_pool;
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  *stream = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (stream == nullptr || stream->capturing) return set_last_error(cudaErrorStreamCaptureUnsupported);
  stream->capturing = true;
  stream->recorded.clear();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (stream == nullptr || !stream->capturing) return set_last_error(cudaErrorInvalidValue);
  stream->capturing = false;
  *graph = new CUgraph_st{std::move(stream->recorded)};
  stream->recorded.clear();
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->launches};
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  for (const auto& launch : exec->launches)
    if (const cudaError_t e = launch(); e != cudaSuccess) return e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  event->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  *ms = std::chrono::duration<float, std::milli>(stop->at - start->at).count();
  return cudaSuccess;
}
