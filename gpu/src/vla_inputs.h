// The launch validation shared by the VLA kernels (vla_fused.cu, vla_chunked.cu; SPEC §1): q, k
// [B,T,H,K], v and o [B,T,H,V] of one dtype (one of `dtypes`), an optional fp32 final_state
// [B,H,K,V], no initial_state (VLA's memory is (Sᵀ, A, ζ): a carried Sᵀ alone does not continue a
// sequence), 1 ≤ K ≤ kVlaMaxK, V ≥ 1.
#pragma once

#include <vector>

#include "validate.h"

namespace larc::gpu::detail {

constexpr int kVlaMaxK = 128;

struct VlaInputs {
  Dtype dtype{};
  const TensorView *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  const TensorView* final_state = nullptr;  // nullptr when not requested
};

VlaInputs validate_vla(Validator& v, const LaunchArgs& args, const std::vector<Dtype>& dtypes);

}  // namespace larc::gpu::detail
