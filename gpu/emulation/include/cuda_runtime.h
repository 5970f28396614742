// The CUDA runtime API as the host emulation provides it: the subset gpu/src uses, with the runtime's
// names and signatures, so that gpu/src compiles unchanged under a host C++ compiler (device_syntax.cuh).
// Device memory is host memory; a launch runs to completion before it returns (every stream is the
// host thread); a stream being captured records its launches into a graph that cudaGraphLaunch replays.
// Launch limits are Hopper's: 1,024 threads a block, grid.y and grid.z ≤ 65,535, 48 KB of dynamic
// shared memory without the opt-in and 227 KB with it, and the failures the runtime reports for them.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

// ---- Qualifiers: functions are host functions; a kernel's __shared__ array is a static, one per
// instantiation, which the threads of one block share (the emulation runs one block at a time and one
// launch at a time).
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

// ---- Built-in vector types and the thread's coordinates -------------------------------------------
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }

extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;

// ---- Errors -----------------------------------------------------------------------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorStreamCaptureUnsupported = 900,
};
const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError();

// ---- Devices ----------------------------------------------------------------------------------------
struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount;
  std::size_t sharedMemPerBlockOptin, totalGlobalMem;
};
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaDeviceSynchronize();

// ---- Memory -----------------------------------------------------------------------------------------
struct CUstream_st;
using cudaStream_t = CUstream_st*;
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
cudaError_t cudaMalloc(void** p, std::size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void* dst, int byte, std::size_t bytes);
struct CUmemPoolHandle_st;
using cudaMemPool_t = CUmemPoolHandle_st*;
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value);

// ---- Streams, events, graphs -----------------------------------------------------------------------
constexpr unsigned cudaStreamNonBlocking = 1;
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1 };
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
struct CUgraph_st;
using cudaGraph_t = CUgraph_st*;
struct CUgraphExec_st;
using cudaGraphExec_t = CUgraphExec_st*;
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
struct CUevent_st;
using cudaEvent_t = CUevent_st*;
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);

// ---- Launches ---------------------------------------------------------------------------------------
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaLaunchAttributeID { cudaLaunchAttributeProgrammaticStreamSerialization = 5 };
struct cudaLaunchAttributeValue {
  unsigned programmaticStreamSerializationAllowed;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  std::size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned numAttrs;
};

namespace larc::gpu::emulation {
// Runs (or, on a stream being captured, records) `body` as a grid of `grid` blocks of `block` threads
// with `smem` bytes of dynamic shared memory; `kernel` identifies the function for its shared-memory
// opt-in. A configuration the device would refuse sets the thread's last error, is returned, and runs
// nothing.
cudaError_t launch(const void* kernel, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                   std::function<void()> body);
cudaError_t set_max_dynamic_shared(const void* kernel, int bytes);

// kernel(args...) as such a grid: the arguments converted to the kernel's parameter types and copied, as
// a launch copies them.
template <class... Params, class... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                          Args&&... args) {
  return launch(reinterpret_cast<const void*>(kernel), grid, block, smem, stream,
                [kernel, params = std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)] {
                  std::apply(kernel, params);
                });
}
}  // namespace larc::gpu::emulation

template <class F>
cudaError_t cudaFuncSetAttribute(F* kernel, cudaFuncAttribute, int value) {
  return larc::gpu::emulation::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), value);
}

template <class... Params, class... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...), Args&&... args) {
  return larc::gpu::emulation::launch_kernel(kernel, config->gridDim, config->blockDim, config->dynamicSmemBytes,
                                            config->stream, std::forward<Args>(args)...);
}

// Programmatic dependent launch: launches run one after another, so there is nothing to wait for.
inline void cudaGridDependencySynchronize() {}
inline void cudaTriggerProgrammaticLaunchCompletion() {}
