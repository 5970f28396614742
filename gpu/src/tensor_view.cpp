// TensorView's element count and strides (api.h).
#include "larc/gpu/api.h"

namespace larc::gpu {

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
