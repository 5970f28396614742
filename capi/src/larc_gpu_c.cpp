// liblarc_gpu.so (include/larc/c/larc_gpu.h): gpu/'s kernel registry and launches, with arguments in
// JSON so that any language can call them with its own device memory and stream. Every failure is a
// message naming the argument; nothing throws across the C boundary.
#include "larc/c/larc_gpu.h"

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "larc/gpu/api.h"
#include "owned_string.h"

namespace {

using nlohmann::json;
namespace gpu = larc::gpu;

using larc::c::owned_string;

// Any dtype of the vocabulary by name; the kernel's validation then names the dtypes it takes.
gpu::Dtype dtype_named(const std::string& name, const std::string& where) {
  std::string known;
  for (gpu::Dtype d : larc::kAllDtypes) {
    if (gpu::dtype_name(d) == name) return d;
    known += (known.empty() ? "" : ", ") + std::string(gpu::dtype_name(d));
  }
  throw std::invalid_argument(where + ".dtype: '" + name + "' is not one of " + known);
}

std::vector<std::int64_t> integers(const json& j, const std::string& where) {
  if (!j.is_array()) throw std::invalid_argument(where + ": expected an array of integers");
  std::vector<std::int64_t> out;
  for (const json& x : j) {
    if (!x.is_number_integer()) throw std::invalid_argument(where + ": expected an array of integers");
    out.push_back(x.get<std::int64_t>());
  }
  return out;
}

gpu::Tensors tensors(const json& args, const char* key) {
  gpu::Tensors out;
  if (!args.contains(key)) return out;
  const json& group = args.at(key);
  if (!group.is_object()) throw std::invalid_argument(std::string(key) + ": expected an object of named tensors");
  for (const auto& [name, t] : group.items()) {
    const std::string where = std::string(key) + "." + name;
    if (!t.is_object()) throw std::invalid_argument(where + ": expected {\"data\", \"dtype\", \"shape\"}");
    if (!t.contains("data") || !t.at("data").is_number_unsigned())
      throw std::invalid_argument(where + ".data: expected the tensor's device address as a non-negative integer");
    if (!t.contains("dtype") || !t.at("dtype").is_string()) throw std::invalid_argument(where + ".dtype: expected a dtype name");
    if (!t.contains("shape")) throw std::invalid_argument(where + ".shape: missing");
    gpu::TensorView v;
    v.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(t.at("data").get<std::uint64_t>()));
    v.dtype = dtype_named(t.at("dtype").get<std::string>(), where);
    v.shape = integers(t.at("shape"), where + ".shape");
    if (t.contains("strides")) v.strides = integers(t.at("strides"), where + ".strides");
    out.emplace(name, std::move(v));
  }
  return out;
}

json limits_json(const gpu::ShapeLimits& l) {
  return {{"max_B", l.max_B}, {"max_T", l.max_T}, {"max_H", l.max_H}, {"max_K", l.max_K}, {"max_V", l.max_V},
          {"min_K", l.min_K}, {"head_dims", l.head_dims}, {"varlen", l.varlen}, {"initial_state", l.initial_state},
          {"scale", l.scale}, {"value_head_groups", l.value_head_groups}, {"ragged", l.ragged},
          {"padding_unwritten", l.padding_unwritten}, {"chunk", l.chunk}};
}

}  // namespace

extern "C" char* larc_gpu_kernels_json(void) {
  try {
    json all = json::array();
    for (const gpu::Kernel& k : gpu::kernels()) {
      json dtypes = json::array();
      for (gpu::Dtype d : k.dtypes) dtypes.push_back(std::string(gpu::dtype_name(d)));
      all.push_back({{"name", k.name}, {"mechanism", k.mechanism}, {"description", k.description}, {"dtypes", dtypes},
                     {"limits", limits_json(k.limits)}});
    }
    return owned_string(all.dump());
  } catch (const std::exception&) {
    return nullptr;
  }
}

extern "C" char* larc_gpu_launch(const char* name, const char* mechanism, int device, void* stream, const char* args_json) {
  const std::string kernel_name = name ? name : "";
  try {
    if (!name || !mechanism) throw std::invalid_argument("name and mechanism: expected strings");
    const gpu::Kernel* k = gpu::find_kernel(name, mechanism);
    if (k == nullptr)
      throw std::invalid_argument("no kernel '" + kernel_name + "' of mechanism '" + mechanism +
                                  "' (larc_gpu_kernels_json lists them)");
    if (device < 0) throw std::invalid_argument("device: expected a device index >= 0, got " + std::to_string(device));
    const json args = json::parse(args_json ? args_json : "", nullptr, false);
    if (args.is_discarded() || !args.is_object()) throw std::invalid_argument("args: expected a JSON object");
    gpu::LaunchArgs launch;
    launch.inputs = tensors(args, "inputs");
    launch.outputs = tensors(args, "outputs");
    launch.stream = stream;
    if (args.contains("scale") && !args.at("scale").is_null()) {
      if (!args.at("scale").is_number()) throw std::invalid_argument("scale: expected a number");
      launch.scale = args.at("scale").get<double>();
    }
    if (const gpu::Status s = gpu::use_device(device); !s) throw std::runtime_error("device " + std::to_string(device) + ": " + s.message);
    if (const gpu::Status s = k->launch(launch); !s) throw std::runtime_error(s.message);
    return nullptr;
  } catch (const std::exception& e) {
    return owned_string("larc_gpu_launch: " + kernel_name + ": " + e.what());
  }
}

extern "C" void larc_gpu_string_free(char* s) { std::free(s); }
