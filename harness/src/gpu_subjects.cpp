#include "gpu_subjects.h"

#include <atomic>
#include <cstring>
#include <stdexcept>

#include "larc/gpu/api.h"

namespace larc::harness::detail {

namespace {

// The device GPU subjects launch on (assign_gpu_to_shard); set before any case runs.
std::atomic<int> chosen_device{0};

void check(const gpu::Status& s) {
  if (!s) throw std::runtime_error(s.message);
}

// A tensor on the device: a TypedTensor together with its NaN guard region, so an out-of-bounds read
// on the device reads NaN and an out-of-bounds write lands in the guard, which is copied back and
// checked; or host integers (cu_seqlens), copied as they are.
struct DeviceCopy {
  gpu::DeviceBuffer buffer;
  gpu::TensorView view;
  std::size_t bytes = 0;

  explicit DeviceCopy(const TypedTensor& t)
      : DeviceCopy(t.data(), t.size_bytes() + TypedTensor::kGuardElements * dtype_bytes(t.dtype()), t.dtype(), t.shape()) {}
  explicit DeviceCopy(const std::vector<std::int64_t>& integers)
      : DeviceCopy(integers.data(), integers.size() * sizeof(std::int64_t), Dtype::i64,
                   {static_cast<std::int64_t>(integers.size())}) {}
  DeviceCopy(const void* host, std::size_t size, Dtype dtype, std::vector<std::int64_t> shape) : bytes(size) {
    gpu::Status s;
    buffer = gpu::DeviceBuffer::allocate(bytes, s);
    check(s);
    check(gpu::copy_to_device(buffer.get(), host, bytes));
    view = {buffer.get(), dtype, std::move(shape), {}};
  }
  void copy_back(TypedTensor& t) const { check(gpu::copy_to_host(t.data(), buffer.get(), bytes)); }
};

// A varlen kernel (FLA's cu_seqlens convention) sees the case's B sequences of length T packed as one
// batch of B·T tokens: the same row-major bytes, with [B,T,...] viewed as [1,B·T,...] and
// cu_seqlens = 0, T, 2T, ..., B·T; states keep their [B,H,K,V] = [N,H,K,V] shape.
// The per-sequence [B,H,K,V] tensors (states and their cotangents), whose second axis is not T.
bool is_state(const std::string& name) {
  return name == "initial_state" || name == "final_state" || name == "dht" || name == "dh0";
}

void pack_as_varlen(gpu::LaunchArgs& args, const Shape& s, std::map<std::string, DeviceCopy>& owned) {
  for (gpu::Tensors* views : {&args.inputs, &args.outputs})
    for (auto& [name, view] : *views)
      if (view.shape.size() >= 2 && view.shape[0] == s.B && view.shape[1] == s.T && !is_state(name)) {
        view.shape[1] *= view.shape[0];
        view.shape[0] = 1;
      }
  std::vector<std::int64_t> cu_seqlens(static_cast<std::size_t>(s.B + 1));
  for (std::int64_t n = 0; n <= s.B; ++n) cu_seqlens[static_cast<std::size_t>(n)] = n * s.T;
  args.inputs["cu_seqlens"] = owned.emplace("cu_seqlens", DeviceCopy(cu_seqlens)).first->second.view;
}

Launcher launcher_of(const gpu::Kernel& kernel, const Mechanism& mechanism) {
  return [&kernel, &mechanism](const TensorMap& inputs, TensorMap& outputs) {
    check(gpu::use_device(chosen_device));  // per call: the gate's worker threads each have their own current device
    std::map<std::string, DeviceCopy> in, out;
    gpu::LaunchArgs args;
    for (const auto& [name, t] : inputs) {
      if (name == "scale") {  // a case's read scale travels as LaunchArgs::scale, FLA's float argument
        float scale = 0;
        std::memcpy(&scale, t.data(), sizeof scale);
        args.scale = scale;
        continue;
      }
      args.inputs[name] = in.emplace(name, DeviceCopy(t)).first->second.view;
    }
    for (const auto& [name, t] : outputs) args.outputs[name] = out.emplace(name, DeviceCopy(t)).first->second.view;
    if (kernel.limits.varlen) {
      ValueMap shapes_only;
      for (const auto& [name, t] : inputs) shapes_only[name] = ref::Tensor<double>(t.shape());
      pack_as_varlen(args, mechanism.shape_of(shapes_only), in);
    }
    check(kernel.launch(args));
    check(gpu::synchronize());
    for (auto& [name, t] : outputs) out.at(name).copy_back(t);
  };
}

}  // namespace

std::string assign_gpu_to_shard(std::uint64_t shard_index) {
  const gpu::DeviceInfo info = gpu::query_devices();
  if (!info.present || info.count < 2) return "";
  chosen_device = static_cast<int>(shard_index % static_cast<std::uint64_t>(info.count));
  return "GPU " + std::to_string(chosen_device) + " of " + std::to_string(info.count);
}

void register_gpu_subjects(std::vector<Subject>& out) {
  if (!gpu::query_devices().present) return;
  for (const gpu::Kernel& k : gpu::kernels()) {
    const Mechanism* mechanism = nullptr;
    for (const Mechanism& m : mechanisms())
      if (m.name == k.mechanism) mechanism = &m;
    if (mechanism == nullptr) continue;  // a kernel of a mechanism the gate does not know yet
    Subject s;
    s.name = k.name;
    s.mechanism = k.mechanism;
    s.description = k.description;
    s.dtypes = k.dtypes;  // one vocabulary (larc/common/): the kernel's declaration is the subject's
    s.limits = k.limits;
    if (k.limits.chunk > 0) s.grades.chunk = k.limits.chunk;  // the io baseline's chunk is the kernel's
    if (k.io_grade) s.grades.grade = Grade::io;
    s.launch = launcher_of(k, *mechanism);
    out.push_back(std::move(s));
  }
}

}  // namespace larc::harness::detail
