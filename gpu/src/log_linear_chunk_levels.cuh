// The Fenwick levels of 64-token chunks shared by the chunked log-linear kernels (log_linear_chunked.cu:
// Mamba-2; log_linear_gdn_chunked.cu: GDN; SPEC §4, LL-C2). Chunks start at multiples of 64, so for
// tokens t, s of chunks c, c' the level is ℓ(t, s) = 1 + ⌊log2(t xor s)⌋ = ℓ(t mod 64, s mod 64) ≤ 6
// when c = c', and 6 + m(c, c') otherwise, m(c, c') = 1 + ⌊log2(c xor c')⌋ the chunk level. Before
// chunk c ≥ 1 the chunk levels cascade, E^(j+1) = E^(0) + … + E^(j) with j = ctz(c); chunk c then reads
// the live levels m ≥ 1, the set bits m − 1 of c.
#pragma once

namespace larc::gpu::detail::log_linear_levels {

constexpr int kChunkBits = 6;  // log2 of the 64-token chunk: chunk level m is token level 6 + m

// Level ℓ(t, s) of two tokens of one chunk (local indices s ≤ t): 0 on the diagonal.
__device__ __forceinline__ int in_chunk_level(int t, int s) { return t == s ? 0 : 32 - __clz(t ^ s); }

}  // namespace larc::gpu::detail::log_linear_levels
