// The plain C++ face of gpu/ (DESIGN.md "Layering rules"): host programs built by g++ call the CUDA
// code only through this header. It includes no CUDA, Eigen, Boost or reference/ header; kernels
// take raw pointers, shapes, strides and dtypes.
//
// Every kernel is an entry of the kernel registry (`kernels()`): its name, the mechanism it computes
// (a name of harness/mechanism.h's registry: "gdn", "kla", "vla", ...), the dtypes it takes, its
// limits and a launcher. The launcher validates every tensor before launching (shapes agree, dtypes,
// strides, alignment, sizes, grid limits) and returns a Status naming the field and what was
// expected instead of launching; it never aborts. The gate, fuzzer, tests and benchmarks iterate the
// registry, so a kernel is checked everywhere by adding one entry (gpu/src/registry.cu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "larc/common/dtype.h"
#include "larc/common/limits.h"

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

// The shared vocabulary (larc/common/): dtypes (kernels take bf16, fp16, fp32 values and int32/int64
// offsets) and the limits a kernel declares, which its gate subject takes over unchanged.
using larc::Dtype;
using larc::dtype_bytes;
using larc::dtype_name;
using larc::ShapeLimits;

// A device tensor: pointer, dtype, shape and strides in elements. Empty strides mean contiguous
// row-major. Kernels take any non-negative strides on the outer dimensions; the innermost one must be
// 1 (the launcher says so otherwise). Outputs are written through `data`.
struct TensorView {
  void* data = nullptr;
  Dtype dtype = Dtype::fp32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;

  std::int64_t numel() const;
  // strides, or the row-major strides of shape when strides is empty
  std::vector<std::int64_t> effective_strides() const;
};

// The outcome of a launch or a device call: ok, or a message naming what was wrong.
struct Status {
  bool ok = true;
  std::string message;
  static Status success() { return {}; }
  static Status failure(std::string message) { return {false, std::move(message)}; }
  explicit operator bool() const { return ok; }
};

// Named tensors, named as the mechanism's inputs and outputs in harness/mechanism.h (FLA's layout:
// sequences [B,T,H,D], gates [B,T,H], states [B,H,K,V] in fp32; for kernels with
// ShapeLimits::value_head_groups, v, gates, states and o over HV value heads). Beyond the mechanism's tensors a
// kernel may take "initial_state" (fp32, the final state's shape) and, for varlen kernels,
// "cu_seqlens" (int32/int64, [N+1], with B = 1 and states [N,H,K,V]).
using Tensors = std::map<std::string, TensorView, std::less<>>;

struct LaunchArgs {
  Tensors inputs;
  Tensors outputs;       // an output the kernel can skip (final states) may be left out
  void* stream = nullptr;  // a cudaStream_t; nullptr is the default stream
  // The read scale of a kernel that has one (ShapeLimits::scale), finite and > 0; 0 means its default
  // K^{-1/2} (FLA's). A kernel without one refuses any other value.
  double scale = 0;
};

struct Kernel {
  std::string name;       // e.g. "gdn-fused-recurrent"
  std::string mechanism;  // harness mechanism name, e.g. "gdn"
  std::string description;
  std::vector<Dtype> dtypes;  // input/output dtypes it takes (states stay fp32)
  ShapeLimits limits;
  // Declares the io grade for every output (docs/gate.md "Precision grades"): its intermediates are the
  // input dtype's; false: the fp32 grade.
  bool io_grade = false;
  // Validates, then enqueues on args.stream; returns without synchronising. A failed validation
  // launches nothing.
  std::function<Status(const LaunchArgs&)> launch;
};

// Every kernel, in a fixed order (gpu/src/registry.cu). Available without a device: validation
// needs none, so bad launches are tested in CI.
const std::vector<Kernel>& kernels();
// nullptr when (name, mechanism) is not registered.
const Kernel* find_kernel(std::string_view name, std::string_view mechanism);

// Device memory owned by the host program (move-only). A failed allocation leaves it empty and sets
// the status; nothing throws.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static DeviceBuffer allocate(std::size_t bytes, Status& status);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  void* get() const { return ptr_; }
  std::size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Makes device `index` current for the calling host thread (cudaSetDevice).
Status use_device(int index);

Status copy_to_device(void* device_dst, const void* host_src, std::size_t bytes);
Status copy_to_host(void* host_dst, const void* device_src, std::size_t bytes);
Status fill_device(void* device_dst, unsigned char byte, std::size_t bytes);
// Waits for the device; returns the first error a kernel raised (e.g. an illegal address) by name.
Status synchronize();

// Fills a contiguous float tensor with values uniform in [lo, hi), a function of (seed, element index)
// only; enqueued on `stream`.
Status fill_uniform(const TensorView& t, float lo, float hi, std::uint64_t seed, void* stream = nullptr);

// CUDA-event timing of a callable that enqueues work on `stream`: runs it `warmup` times, then
// `iterations` times between two events, and returns the mean milliseconds per call in *ms.
Status time_on_stream(const std::function<Status()>& enqueue, void* stream, int warmup, int iterations, float* ms);

}  // namespace larc::gpu
