// Launchers and registry entries of the chunked GDN / KLA forward (the kernels:
// delta_rule_chunked.cuh; docs/gpu-kernels/delta-rule.md "Chunked GDN and KLA"). Inputs and outputs are
// exactly gdn-fused-recurrent's and kla-fused-recurrent's (delta_rule_fused.cu): q, k [B,T,H,K],
// v and o [B,T,H,V], g and beta (KLA: eta) [B,T,H] in one dtype, optional fp32 initial_state and
// final_state [B,H,K,V]; scale K^-1/2; KLA's ε = 1e-6. K ≤ 256, any V ≥ 1, any T ≥ 0. The varlen
// kernels take FLA's cu_seqlens with B = 1 and states [N,H,K,V], as gdn/kla-fused-recurrent-varlen.
//
// Workspace: one Record per (head, chunk slot) (delta_rule_chunked.cuh) and the state entering the
// chunk, S_c, as chunk_output's operand: 265 KB a chunk at K = V = 128 (KP = 64, 128 or 256, the least
// ≥ K), e.g. 8.7 GB at B = 1, H = 16, T = 131,072; B·⌈T/64⌉ slots a head (varlen: ⌈T/64⌉ + N, after an
// [N+1] int64 header of first slots). Allocated stream-ordered by each launch and freed after the last
// kernel (chunk_launch.cuh), so a launch stays asynchronous.
// Two grades: the fp32 grade (intermediate operands as three bf16 terms on the state's path, two on the
// output's) and the io grade (every intermediate rounded once to the input dtype, declared so that the gate
// judges it at io; its records are smaller: one plane instead of three and two on bf16).
#include <algorithm>
#include <cmath>
#include <string>

#include "chunk_launch.cuh"
#include "delta_rule_chunked.cuh"
#include "families.h"
#include "larc/common/mechanism_constants.h"

namespace larc::gpu::detail {

namespace {

using namespace delta_rule_chunked;
using namespace chunk_launch;

constexpr float kKlaEps = float(mechanism_constants::kla_eps);
constexpr std::int64_t kMaxK = 256;

// bf16 terms of the intermediate operands on the state's path and on chunk_output's (delta_rule_chunked.cuh
// Record): the fp32 grade's, or the io grade's input terms (bf16 one, fp16 two). fp32 inputs have one
// fp32 plane whatever the count (FMA in fp64), so their io kernels run the fp32 grade's instantiations.
template <class T, Grade GRADE>
constexpr int kStatePathTerms = GRADE == Grade::io && kMma<T> ? kInputTerms<T> : kStateTerms;
template <class T, Grade GRADE>
constexpr int kOutputPathTerms = GRADE == Grade::io && kMma<T> ? kInputTerms<T> : kOutputTerms;

}  // namespace

namespace delta_rule_chunked {

using namespace chunk_launch;

template <class T, int KP, Step STEP, int ST, int OT>
Status enqueue_states(const Params<T>& p, cudaStream_t stream, const std::string& name) {
  static_assert(kMma<T> || (ST == kStateTerms && OT == kOutputTerms), "fp32 inputs: the fp32 grade's record");
  const auto prepare = chunk_prepare<T, KP, STEP, ST, OT>;
  // bf16/fp16: the state in registers (register_state_pass.cuh); fp32: in shared memory, FMA in fp64.
  void (*pass)(Params<T>) = nullptr;
  int pass_threads = 0;
  std::size_t pass_smem = 0;
  if constexpr (!kMma<T>) {
    pass = state_pass<T, KP>;
    pass_threads = kThreads;
    pass_smem = sizeof(float) * PassLayout<T, KP>::kWords;
  } else {
    pass = register_pass<T, KP, ST, OT>;
    pass_threads = register_state_pass::kThreads;
    pass_smem = sizeof(float) * register_state_pass::Layout<T, KP, ST>::kWords;
  }
  const std::size_t prepare_smem = sizeof(float) * PrepareLayout<T, KP, ST>::kWords;
  cudaError_t e = allow_smem(prepare, prepare_smem);
  if (e == cudaSuccess) e = allow_smem(pass, pass_smem);
  if (e != cudaSuccess) return cuda_failure(name, "shared-memory opt-in", e);  // nothing was launched
  if (p.cu_seqlens != nullptr) {
    SequenceMap m;
    m.cu_seqlens = p.cu_seqlens;
    m.int64 = p.cu_seqlens_int64;
    m.sequences = p.sequences;
    m.tokens = p.tokens;
    m.first_slot = const_cast<std::int64_t*>(p.first_slot);
    launch_kernel(chunk_map<kMapThreads>, 1, kMapThreads, 0, stream, m);
  }
  const std::int64_t records = p.H * p.slots;
  if (records > 0) launch_kernel(prepare, static_cast<unsigned>(records), kThreads, prepare_smem, stream, p);
  launch_kernel(pass, static_cast<unsigned>(p.sequences * p.H * p.v_tiles), pass_threads, pass_smem, stream, p);
  return Status::success();
}

#define LARC_STATES(T, KP) \
  template Status enqueue_states<T, KP, Step::beta>(const Params<T>&, cudaStream_t, const std::string&); \
  template Status enqueue_states<T, KP, Step::kaczmarz>(const Params<T>&, cudaStream_t, const std::string&);
#define LARC_STATES_KP(T) LARC_STATES(T, 64) LARC_STATES(T, 128) LARC_STATES(T, 256)
LARC_STATES_KP(__nv_bfloat16)
LARC_STATES_KP(__half)
LARC_STATES_KP(float)
#undef LARC_STATES_KP
#undef LARC_STATES

}  // namespace delta_rule_chunked

namespace {

template <class T, Grade GRADE, int KP, Step STEP>
Status enqueue(Params<T> p, cudaStream_t stream, const std::string& name) {
  constexpr int ST = kStatePathTerms<T, GRADE>, OT = kOutputPathTerms<T, GRADE>;
  const auto output = chunk_output<T, KP, ST, OT>;
  const std::size_t output_smem = sizeof(float) * OutputLayout<T, KP, OT>::kWords;
  if (const cudaError_t e = allow_smem(output, output_smem); e != cudaSuccess)
    return cuda_failure(name, "shared-memory opt-in", e);  // nothing was launched
  float* workspace = nullptr;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(states_workspace_floats<T, KP, ST, OT>(p));
  if (const Status st = allocate_workspace(name, bytes, stream, &workspace); !st) return st;
  place_states_workspace<T, KP, ST, OT>(p, workspace);
  if (const Status st = enqueue_states<T, KP, STEP, ST, OT>(p, stream, name); !st) {
    (void)finish(name, workspace, stream);
    return st;
  }
  const std::int64_t records = p.H * p.slots;
  if (records > 0) launch_kernel(output, static_cast<unsigned>(records * p.out_tiles), kThreads, output_smem, stream, p);
  return finish(name, workspace, stream);
}

template <Step STEP, Grade GRADE>
Status launch(const LaunchArgs& args, const std::string& name, bool varlen) {
  Validator v(name, args);
  const Dtype dt = v.dtype_of("q", {Dtype::bf16, Dtype::fp16, Dtype::fp32});
  const TensorView* q = v.input("q", "BTHK", dt);
  const TensorView* k = v.input("k", "BTHK", dt);
  // Everything but q and k per value head (W); W a multiple of H groups the value heads (FLA's GVA).
  const TensorView* val = v.input("v", "BTWV", dt);
  const TensorView* gate = v.input("g", "BTW", dt);
  const TensorView* step = v.input(STEP == Step::beta ? "beta" : "eta", "BTW", dt);
  const TensorView* cu = nullptr;
  if (varlen) cu = v.cu_seqlens();
  const char* states = varlen ? "NWKV" : "BWKV";
  const TensorView* h0 = v.input("initial_state", states, Dtype::fp32, true);
  const TensorView* o = v.output("o", "BTWV", dt);
  const TensorView* ht = v.output("final_state", states, Dtype::fp32, true);
  v.require_size('K', 1, kMaxK);
  require_prepare_k(v, dt);
  v.require_size('V', 1, 0);
  v.require_value_head_groups();
  // H below: the value heads, over which every kernel of the pass runs.
  const std::int64_t sequences = v.size(varlen ? 'N' : 'B'), H = v.size('W'), tokens = v.size('T');
  const std::int64_t chunks = chunks_in(tokens);
  // Record slots per head: chunks per batch entry × B; varlen: a sequence of L tokens takes ⌈L/64⌉ ≤
  // L/64 + 1 chunks, so non-overlapping sequences take at most ⌈T/64⌉ + N.
  const std::int64_t slots = varlen ? chunks + sequences : v.size('B') * chunks;
  const std::int64_t v_tiles = (v.size('V') + kTileV - 1) / kTileV;
  const std::int64_t out_tiles = (v.size('V') + kOutTileV - 1) / kOutTileV;
  v.require_grid(std::max({H * slots * out_tiles, sequences * H * v_tiles}));  // the kernels' largest grid
  const float scale = v.read_scale(v.size('K'));
  if (!v.ok()) return v.status();
  if (sequences * H == 0) return Status::success();  // no sequence or no head: nothing to compute

  return dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    p.q = strided<const T>(q);
    p.k = strided<const T>(k);
    p.v = strided<const T>(val);
    p.gate = strided<const T>(gate);
    p.step = strided<const T>(step);
    p.o = strided<T>(o);
    p.initial_state = strided<const float>(h0);
    p.final_state = strided<float>(ht);
    p.cu_seqlens = cu != nullptr ? cu->data : nullptr;
    p.cu_seqlens_int64 = cu != nullptr && cu->dtype == Dtype::i64;
    p.tokens = tokens;
    p.chunks = chunks;
    p.sequences = sequences;
    p.slots = slots;
    p.H = static_cast<int>(H);
    p.group = static_cast<int>(H / v.size('H'));
    p.K = static_cast<int>(v.size('K'));
    p.V = static_cast<int>(v.size('V'));
    p.v_tiles = static_cast<int>(v_tiles);
    p.out_tiles = static_cast<int>(out_tiles);
    p.scale = scale;
    p.eps = kKlaEps;
    if (p.K <= 64) return enqueue<T, GRADE, 64, STEP>(p, stream_of(args), name);
    if (p.K <= 128) return enqueue<T, GRADE, 128, STEP>(p, stream_of(args), name);
    return enqueue<T, GRADE, 256, STEP>(p, stream_of(args), name);
  });
}

}  // namespace

void append_delta_rule_chunked_kernels(std::vector<Kernel>& out) {
  append_with_varlen_twins(
      out, kMaxK, kChunk,
      {{launch<Step::beta, Grade::fp32>, false, "gdn-chunked", "gdn",
        "Gated DeltaNet, chunked (C = 64, UT/WY): W, U per chunk in parallel, the state pass, then the output per "
        "chunk in parallel; bf16/fp16 products on tensor cores, fp32 by FMA in fp64"},
       {launch<Step::kaczmarz, Grade::fp32>, false, "kla-chunked", "kla",
        "KLA, chunked as gdn-chunked with β = η / (‖k‖² + ε) computed from k in the kernel"},
       {launch<Step::beta, Grade::io>, true, "gdn-chunked-io", "gdn",
        "gdn-chunked with every intermediate operand rounded once to the input dtype (one MMA per product on "
        "bf16), declared io"},
       {launch<Step::kaczmarz, Grade::io>, true, "kla-chunked-io", "kla",
        "kla-chunked with every intermediate operand rounded once to the input dtype, declared io"}});
}

}  // namespace larc::gpu::detail
