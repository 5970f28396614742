// The launch validation shared by the HLA kernels (hla_fused.cu, hla_chunked.cu; SPEC §5): q, k
// [B,T,H,K], v and o [B,T,H,V] of one dtype, K ≤ 128, no state in or out (γ = 1).
#pragma once

#include "validate.h"
#include "larc/common/mechanism_constants.h"

namespace larc::gpu::detail {

constexpr int kHlaMaxK = 128;
constexpr float kHlaNormalizedEps = float(mechanism_constants::hla_normalized_eps);  // ε of the normalised read

struct HlaInputs {
  Dtype dtype{};
  const TensorView *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
};

HlaInputs validate_hla(Validator& v);

}  // namespace larc::gpu::detail
