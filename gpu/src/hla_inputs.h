// The launch validation shared by the HLA kernels (hla_fused.cu, hla_chunked.cu; SPEC §5): q, k
// [B,T,H,K], v and o [B,T,H,V] of one dtype, K ≤ 128, no state in or out (γ = 1).
#pragma once

#include "validate.h"

namespace larc::gpu::detail {

constexpr int kHlaMaxK = 128;
constexpr float kHlaNormalizedEps = 1e-6f;  // harness/src/mechanisms_hla.cpp's ε of the normalised read

struct HlaInputs {
  DType dtype{};
  const TensorView *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
};

HlaInputs validate_hla(Validator& v);

}  // namespace larc::gpu::detail
