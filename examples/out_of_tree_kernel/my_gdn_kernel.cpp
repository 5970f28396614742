#include "my_gdn_kernel.h"

#include <algorithm>
#include <cmath>
#include <vector>

// Per token, in FLA's order: S ← e^{g_t} S;  S ← S + β_t k_t (v_t − Sᵀ k_t)ᵀ;  o_t = Sᵀ (scale · q_t).
void my_gdn_forward(const GdnArgs& a) {
  std::vector<float> S(static_cast<std::size_t>(a.K) * a.V), u(a.V);
  for (int b = 0; b < a.B; ++b) {
    for (int h = 0; h < a.H; ++h) {
      const std::size_t head_state = (static_cast<std::size_t>(b) * a.H + h) * a.K * a.V;
      if (a.initial_state)
        std::copy(a.initial_state + head_state, a.initial_state + head_state + S.size(), S.begin());
      else
        std::fill(S.begin(), S.end(), 0.0f);
      for (int t = 0; t < a.T; ++t) {
        const std::size_t bth = (static_cast<std::size_t>(b) * a.T + t) * a.H + h;
        const float* q = a.q + bth * a.K;
        const float* k = a.k + bth * a.K;
        const float* v = a.v + bth * a.V;
        const float decay = std::exp(a.g[bth]) * a.carry;
        for (float& s : S) s *= decay;
        for (int j = 0; j < a.V; ++j) {
          float sk = 0;
          for (int i = 0; i < a.K; ++i) sk += S[i * a.V + j] * k[i];
          u[j] = a.beta[bth] * (v[j] - sk);
        }
        for (int i = 0; i < a.K; ++i)
          for (int j = 0; j < a.V; ++j) S[i * a.V + j] += k[i] * u[j];
        for (int j = 0; j < a.V; ++j) {
          float o = 0;
          for (int i = 0; i < a.K; ++i) o += S[i * a.V + j] * (a.scale * q[i]);
          a.o[bth * a.V + j] = o;
        }
      }
      std::copy(S.begin(), S.end(), a.final_state + head_state);
    }
  }
}
