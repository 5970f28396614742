// Stands in for a kernel repository's own kernel: Gated DeltaNet (FLA's chunk_gated_delta_rule
// semantics) behind a raw-pointer API, as a CUDA launcher would be. Row-major FLA layout:
// q, k [B,T,H,K]; v, o [B,T,H,V]; g (log-decays), beta [B,T,H]; initial_state (optional: null is
// zero) and final_state [B,H,K,V].
#pragma once

struct GdnArgs {
  const float *q, *k, *v, *g, *beta;
  const float* initial_state;
  float *o, *final_state;
  int B, T, H, K, V;
  float scale;
  float carry = 1.0f;  // 1 is correct; anything else plants a defect (the state carry scaled each step)
};

void my_gdn_forward(const GdnArgs& a);
