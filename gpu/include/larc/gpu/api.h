// The plain C++ face of gpu/ (DESIGN.md "Layering rules"): host programs built by g++ call the CUDA
// code only through this header. It includes no CUDA, Eigen, Boost or reference/ header; kernels
// take raw pointers, shapes, strides and dtypes.
#pragma once

#include <string>

namespace larc::gpu {

// What the CUDA runtime reports about the devices of this machine. A machine without a device or
// without a driver is not an error for the caller: present is false and error says why.
struct DeviceInfo {
  bool present = false;  // at least one device is usable
  int count = 0;         // number of devices the runtime sees
  std::string name;      // device 0's name
  int cc_major = 0;      // device 0's compute capability
  int cc_minor = 0;
  std::string error;     // the CUDA error string when present is false
};

// Never throws on CUDA errors and never aborts: they become present = false with the error string.
DeviceInfo query_devices();

}  // namespace larc::gpu
