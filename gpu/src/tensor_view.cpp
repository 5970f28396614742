// DType names and sizes, TensorView's element count and strides (api.h).
#include "larc/gpu/api.h"

namespace larc::gpu {

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
  }
  return "unknown";
}

std::size_t dtype_bytes(DType d) {
  switch (d) {
    case DType::bf16:
    case DType::fp16: return 2;
    case DType::fp32:
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  return 1;
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::vector<std::int64_t> TensorView::effective_strides() const {
  if (!strides.empty()) return strides;
  std::vector<std::int64_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

const Kernel* find_kernel(std::string_view name, std::string_view mechanism) {
  for (const Kernel& k : kernels())
    if (k.name == name && k.mechanism == mechanism) return &k;
  return nullptr;
}

}  // namespace larc::gpu
