// Device discovery for larc::gpu::query_devices (api.h).
#include <cuda_runtime.h>

#include <string>

#include "larc/gpu/api.h"

namespace larc::gpu {

namespace {
std::string describe(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}
}  // namespace

DeviceInfo query_devices() {
  DeviceInfo info;
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();  // reset the runtime's last error so later calls start clean
    info.error = describe(e);
    return info;
  }
  info.count = count;
  if (count == 0) {
    info.error = "no CUDA device";
    return info;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, 0); e != cudaSuccess) {
    cudaGetLastError();
    info.error = describe(e);
    return info;
  }
  info.present = true;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  return info;
}

}  // namespace larc::gpu
