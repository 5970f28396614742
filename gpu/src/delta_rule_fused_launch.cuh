// The host side of the fused recurrent kernels shared by their launchers: validation of a launch into
// the kernel's parameters, and the enqueue of one launch (delta_rule_fused.cu: one launch per forward;
// delta_rule_decode_graph.cu: one launch per decode step of a CUDA graph). Conventions are the harness
// mechanisms' (harness/src/mechanisms_delta_rule.cpp, mechanisms_linear_attention.cpp,
// mechanisms_gla.cpp): q, k [B,T,H,K], v and o [B,T,H,V], gates [B,T,H] (gk [B,T,H,K]), fp32 states
// [B,H,K,V]; varlen launches take FLA's cu_seqlens with B = 1 and states [N,H,K,V].
#pragma once

#include <cmath>
#include <string>

#include "delta_rule_fused.cuh"
#include "larc/common/mechanism_constants.h"

namespace larc::gpu::detail::delta_rule {

constexpr float kKlaEps = float(mechanism_constants::kla_eps);
constexpr float kRatioEps = float(mechanism_constants::la_ratio_eps);
constexpr std::int64_t kMaxK = 256;

// One launch of fused_recurrent<Pol, T, KMAX, CHUNK, DEP>. A programmatic kernel with `dependent` is
// launched as a programmatic dependent of the launch before it on the stream
// (cudaLaunchAttributeProgrammaticStreamSerialization; in stream capture, a programmatic graph edge).
template <class Pol, class T, int KMAX, int CHUNK, Dependency DEP = Dependency::stream>
cudaError_t enqueue(Params<T> p, std::int64_t sequences, cudaStream_t stream, bool dependent = false) {
  using G = GeometryFor<KMAX, CHUNK>;
  p.tiles = (p.V + G::tile_v - 1) / G::tile_v;
  p.capacity = static_cast<int>(p.tokens < CHUNK ? p.tokens : CHUNK);
  if (p.capacity == 0) p.capacity = 1;
  const int buffers = p.tokens > p.capacity ? 2 : 1;
  const std::size_t smem = sizeof(float) * static_cast<std::size_t>(buffers) * staging_floats<Pol, G>(p.capacity);
  const auto kernel = fused_recurrent<Pol, T, KMAX, CHUNK, DEP>;
  if (smem > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  const std::int64_t blocks = sequences * p.H * p.tiles;
  if constexpr (DEP == Dependency::programmatic) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(blocks));
    config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = dependent ? 1 : 0;
    return cudaLaunchKernelEx(&config, kernel, p);
  } else {
    launch_kernel(kernel, static_cast<unsigned>(blocks), kThreads, smem, stream, p);
    return cudaSuccess;
  }
}

// The state rows an instantiation holds: the fewest that fit K (64, 128 or 256), or, for the
// wide-k launch variants, the next wider (K ≤ 64 as 128, K ≤ 128 as 256; K > 128 as 256 still). K is
// summed as 8 runs of KMAX/8 rows, so the wider instantiation sums the same products in other runs:
// another accumulation order of the same algorithm, registered to measure what honest launch changes
// do to a kernel's error (docs/gate.md, "Accuracy-regression profiles").
enum class StateRows { fitted, wide };

// K ≤ 64, 128, 256: the rows each lane holds, chosen at launch; decode (at most one token per
// sequence on average, and every programmatic launch) stages one token at a time and maps lanes for
// whole-sector state traffic. The arithmetic of a token does not depend on the decode choice (the
// fixed summation tree of delta_rule_fused.cuh), so every launch of a sequence with the same StateRows
// gives the same bits.
template <class Pol, Dependency DEP = Dependency::stream, class T>
cudaError_t enqueue_for_k(const Params<T>& p, std::int64_t sequences, StateRows rows, cudaStream_t stream,
                          bool dependent = false) {
  const bool decode = p.tokens <= (p.cu_seqlens != nullptr ? sequences : 1);
  const auto run = [&]<int KMAX>() {
    if constexpr (DEP == Dependency::programmatic)
      return enqueue<Pol, T, KMAX, 1, DEP>(p, sequences, stream, dependent);
    else
      return decode ? enqueue<Pol, T, KMAX, 1>(p, sequences, stream)
                    : enqueue<Pol, T, KMAX, kPrefillChunk<KMAX>>(p, sequences, stream);
  };
  const int fitted = p.K <= 64 ? 64 : p.K <= 128 ? 128 : 256;
  const int kmax = rows == StateRows::wide && fitted < 256 ? 2 * fitted : fitted;
  if (kmax == 64) return run.template operator()<64>();
  if (kmax == 128) return run.template operator()<128>();
  return run.template operator()<256>();
}

// Validates a launch of Pol's fused recurrent kernel named `name` (varlen: with cu_seqlens; max_T > 0:
// at most max_T tokens), then calls enqueue(params, sequences, stream) with its parameters — Params<T>
// for the dtype of q — and returns the launch's status. Nothing is enqueued after a failed validation,
// nor when there is no sequence or no head.
template <class Pol, class Enqueue>
Status validated_launch(const LaunchArgs& args, const std::string& name, bool varlen, std::int64_t max_T,
                        Enqueue&& enqueue) {
  Validator v(name, args);
  const Dtype dt = v.dtype_of("q", {Dtype::bf16, Dtype::fp16, Dtype::fp32});
  const TensorView* q = v.input("q", "BTHK", dt);
  const TensorView* k = v.input("k", "BTHK", dt);
  // Everything but q and k per value head (W); W a multiple of H groups the value heads (FLA's GVA).
  const TensorView* val = v.input("v", "BTWV", dt);
  const TensorView* gate = Pol::decay == Decay::scalar    ? v.input("g", "BTW", dt)
                           : Pol::decay == Decay::channel ? v.input("gk", "BTWK", dt)
                                                          : nullptr;
  const TensorView* step = Pol::write == Write::delta                  ? v.input("beta", "BTW", dt)
                           : Pol::write == Write::delta_key_normalised ? v.input("eta", "BTW", dt)
                                                                       : nullptr;
  const TensorView* cu = nullptr;
  if (varlen) cu = v.cu_seqlens();
  const char* states = varlen ? "NWKV" : "BWKV";
  const TensorView* h0 = v.input("initial_state", states, Dtype::fp32, true);
  const TensorView* z0 = Pol::ratio ? v.input("initial_normalizer", varlen ? "NWK" : "BWK", Dtype::fp32, true) : nullptr;
  const TensorView* o = v.output("o", "BTWV", dt);
  const TensorView* ht = v.output("final_state", states, Dtype::fp32, true);
  const TensorView* zt = Pol::ratio ? v.output("final_normalizer", varlen ? "NWK" : "BWK", Dtype::fp32, true) : nullptr;
  v.require_size('K', 1, kMaxK);
  v.require_size('V', 1, 0);
  if (max_T > 0) v.require_size('T', 0, max_T);
  v.require_value_head_groups();
  const std::int64_t sequences = v.size(varlen ? 'N' : 'B');
  const std::int64_t narrowest_tile = Geometry<64, 8>::tile_v;  // the most blocks any geometry launches
  const std::int64_t blocks = sequences * v.size('W') * ((v.size('V') + narrowest_tile - 1) / narrowest_tile);
  v.require_grid(blocks);
  const float scale = Pol::ratio ? 1.f : v.read_scale(v.size('K'));
  if (!v.ok()) return v.status();
  if (blocks == 0) return Status::success();  // no sequence or no head: nothing to compute

  const cudaError_t e = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    p.q = strided<const T>(q);
    p.k = strided<const T>(k);
    p.v = strided<const T>(val);
    p.gate = strided<const T>(gate);
    p.step = strided<const T>(step);
    p.o = strided<T>(o);
    p.initial_state = strided<const float>(h0);
    p.initial_normalizer = strided<const float>(z0);
    p.final_state = strided<float>(ht);
    p.final_normalizer = strided<float>(zt);
    p.cu_seqlens = cu != nullptr ? cu->data : nullptr;
    p.cu_seqlens_int64 = cu != nullptr && cu->dtype == Dtype::i64;
    p.tokens = v.size('T');
    p.H = static_cast<int>(v.size('W'));
    p.group = static_cast<int>(v.size('W') / v.size('H'));
    p.K = static_cast<int>(v.size('K'));
    p.V = static_cast<int>(v.size('V'));
    p.scale = scale;
    p.eps = Pol::ratio ? kRatioEps : kKlaEps;
    return enqueue(p, sequences, stream_of(args));
  });
  if (e != cudaSuccess)  // nothing or only part was enqueued (a shared-memory opt-in, a graph's capture)
    return Status::failure(name + ": launch failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  return launch_status(name);
}

}  // namespace larc::gpu::detail::delta_rule
