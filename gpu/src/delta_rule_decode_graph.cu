// Multi-step decode of la, deltanet, gdn, kla and gla (larc/gpu/decode_graph.h; docs/gpu-kernels/delta-rule.md,
// "Multi-step decode"): one-token launches of the fused recurrent kernel (delta_rule_fused.cuh) in its
// programmatic form, captured into one CUDA graph in which step s + 1 is a programmatic dependent launch
// of step s, and replayed on the caller's stream. The public DecodeGraph captures the caller's steps once
// for many replays; the registry's `*-fused-recurrent-decode-graph` kernels run the T tokens of an
// ordinary [B,T,H,·] launch as T such steps on one state, captured and replayed once per launch, so the
// gate and the GPU tests judge the path against the oracle and against the one-launch kernel.
#include <mutex>
#include <string>
#include <utility>

#include "capture_lock.h"
#include "delta_rule_fused_launch.cuh"
#include "families.h"
#include "larc/gpu/decode_graph.h"

namespace larc::gpu::detail {

namespace {

using namespace delta_rule;

// Captures what enqueue(stream) enqueues on a private stream into an executable graph (*exec; null on
// failure). The capture is thread-local and holds capture_lock.h's lock, so that no device-wide call of
// gpu/ in another thread (a synchronisation, a free) meets it; the stream the graph is launched on later
// may be the legacy default stream, which cannot be captured itself. A failed capture leaves no error
// behind for the thread's next launch to find.
template <class Enqueue>
cudaError_t capture_graph(Enqueue&& enqueue, cudaGraphExec_t* exec) {
  *exec = nullptr;
  const std::unique_lock lock(capture_mutex());
  cudaStream_t capturing = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&capturing, cudaStreamNonBlocking);
  if (e != cudaSuccess) return e;
  e = cudaStreamBeginCapture(capturing, cudaStreamCaptureModeThreadLocal);
  if (e == cudaSuccess) {
    const cudaError_t enqueued = enqueue(capturing);
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(capturing, &graph);  // ends the capture whatever was enqueued
    if (enqueued != cudaSuccess) e = enqueued;
    if (e == cudaSuccess) e = cudaGraphInstantiate(exec, graph, 0);
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(capturing);
  if (e != cudaSuccess) cudaGetLastError();
  return e;
}

// x at token s of its [B,T,...] tensor (an absent tensor stays absent).
template <class T>
Strided<T> at_token(Strided<T> x, std::int64_t s) {
  if (x.data != nullptr) x.data += s * x.s1;
  return x;
}

// The T tokens of a validated launch as T one-token steps of one graph on one state, updated in place:
// final_state, or scratch state when the caller wants none. Step 0 reads initial_state (zeros when
// absent); every later step reads the state the step before wrote. Each step is the one-token decode
// launch of the fused recurrent kernel, so its arithmetic, and o and the final state, are that kernel's
// bit for bit.
template <class Pol, class T>
cudaError_t enqueue_token_steps(const Params<T>& p, std::int64_t sequences, cudaStream_t stream) {
  if (p.tokens == 0)  // no step: the final state is the initial one, as a launch of no token writes it
    return enqueue_for_k<Pol, Dependency::programmatic>(p, sequences, StateRows::fitted, stream);
  Strided<float> state = p.final_state;
  float* scratch = nullptr;
  if (state.data == nullptr) {
    const std::int64_t head = std::int64_t{p.K} * p.V;
    const cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&scratch), sizeof(float) * sequences * p.H * head, stream);
    if (e != cudaSuccess) return e;
    state = {scratch, p.H * head, head, p.V, 1};
  }
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = capture_graph(
      [&](cudaStream_t capturing) {
        for (std::int64_t s = 0; s < p.tokens; ++s) {
          Params<T> token = p;
          token.q = at_token(p.q, s);
          token.k = at_token(p.k, s);
          token.v = at_token(p.v, s);
          token.gate = at_token(p.gate, s);
          token.step = at_token(p.step, s);
          token.o = at_token(p.o, s);
          token.tokens = 1;
          if (s > 0) token.initial_state = {state.data, state.s0, state.s1, state.s2, state.s3};
          token.final_state = state;
          const cudaError_t launched =
              enqueue_for_k<Pol, Dependency::programmatic>(token, sequences, StateRows::fitted, capturing, s > 0);
          if (launched != cudaSuccess) return launched;
        }
        return cudaSuccess;
      },
      &exec);
  if (e == cudaSuccess) e = cudaGraphLaunch(exec, stream);
  if (exec != nullptr) cudaGraphExecDestroy(exec);  // a graph in flight is freed when it completes
  if (scratch != nullptr) {
    const cudaError_t freed = cudaFreeAsync(scratch, stream);
    if (e == cudaSuccess) e = freed;
  }
  return e;
}

// A registered kernel's launch: the T tokens of `args` as T graph-captured steps.
template <class Pol>
Status launch_tokens(const LaunchArgs& args, const std::string& name) {
  return validated_launch<Pol>(args, name, false, kMaxDecodeGraphSteps,
                               [](const auto& p, std::int64_t sequences, cudaStream_t stream) {
                                 return enqueue_token_steps<Pol>(p, sequences, stream);
                               });
}

// One step of a DecodeGraph (T ≤ 1), enqueued on args.stream (the capturing stream); a programmatic
// dependent of the step enqueued before it once `enqueued` is set (a step without a sequence or a
// head enqueues nothing).
template <class Pol>
Status launch_step(const LaunchArgs& args, const std::string& name, bool& enqueued) {
  return validated_launch<Pol>(args, name, false, 1, [&](const auto& p, std::int64_t sequences, cudaStream_t stream) {
    const cudaError_t e = enqueue_for_k<Pol, Dependency::programmatic>(p, sequences, StateRows::fitted, stream, enqueued);
    enqueued = true;
    return e;
  });
}

struct DecodeMechanism {
  const char* name;
  const char* description;
  Status (*launch_tokens)(const LaunchArgs&, const std::string&);
  Status (*launch_step)(const LaunchArgs&, const std::string&, bool&);
};

constexpr DecodeMechanism kDecodeMechanisms[] = {
    {"la", "linear attention", launch_tokens<LinearAttention>, launch_step<LinearAttention>},
    {"deltanet", "DeltaNet", launch_tokens<DeltaNet>, launch_step<DeltaNet>},
    {"gdn", "Gated DeltaNet", launch_tokens<GatedDeltaNet>, launch_step<GatedDeltaNet>},
    {"kla", "KLA", launch_tokens<KaczmarzLinearAttention>, launch_step<KaczmarzLinearAttention>},
    {"gla", "GLA", launch_tokens<GatedLinearAttention>, launch_step<GatedLinearAttention>},
};

const DecodeMechanism* find_decode_mechanism(std::string_view mechanism) {
  for (const DecodeMechanism& m : kDecodeMechanisms)
    if (mechanism == m.name) return &m;
  return nullptr;
}

std::string decode_graph_name(std::string_view mechanism) { return std::string(mechanism) + "-fused-recurrent-decode-graph"; }

}  // namespace

void append_delta_rule_decode_graph_kernels(std::vector<Kernel>& out) {
  for (const DecodeMechanism& m : kDecodeMechanisms) {
    const std::string name = decode_graph_name(m.name);
    auto run = [name, launch = m.launch_tokens](const LaunchArgs& args) { return launch(args, name); };
    Kernel k = delta_rule_entry(name, m.name,
                                std::string(m.description) +
                                    ", one token a step: the T tokens as T one-token launches of " + m.name +
                                    "-fused-recurrent captured into one CUDA graph, each a programmatic dependent "
                                    "launch of the step before (multi-step decode)",
                                false, kMaxK, std::move(run));
    k.limits.max_T = kMaxDecodeGraphSteps;  // one graph node a token
    k.limits.value_head_groups = true;
    out.push_back(std::move(k));
  }
}

}  // namespace larc::gpu::detail

namespace larc::gpu {

bool has_decode_graph(std::string_view mechanism) { return detail::find_decode_mechanism(mechanism) != nullptr; }

DecodeGraph DecodeGraph::capture(std::string_view mechanism, const std::vector<LaunchArgs>& steps, Status& status) {
  DecodeGraph graph;
  const std::string name = detail::decode_graph_name(mechanism);
  const detail::DecodeMechanism* m = detail::find_decode_mechanism(mechanism);
  if (m == nullptr) {
    status = Status::failure(name + ": no decode graph for mechanism '" + std::string(mechanism) + "'");
    return graph;
  }
  if (static_cast<std::int64_t>(steps.size()) > kMaxDecodeGraphSteps) {
    status = Status::failure(name + ": " + std::to_string(steps.size()) + " steps, at most " +
                             std::to_string(kMaxDecodeGraphSteps) + " in one graph");
    return graph;
  }
  Status step_status;
  bool enqueued = false;
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = detail::capture_graph(
      [&](cudaStream_t capturing) {
        for (std::size_t s = 0; s < steps.size() && step_status; ++s) {
          LaunchArgs step = steps[s];
          step.stream = capturing;
          step_status = m->launch_step(step, name + " step " + std::to_string(s), enqueued);
        }
        return step_status ? cudaSuccess : cudaErrorInvalidValue;
      },
      &exec);
  if (!step_status) {
    status = step_status;
  } else if (e != cudaSuccess) {
    status = Status::failure(name + ": launch failed (capture): " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  } else {
    graph.exec_ = exec;
    graph.steps_ = steps.size();
    status = Status::success();
  }
  return graph;
}

DecodeGraph::DecodeGraph(DecodeGraph&& other) noexcept
    : exec_(std::exchange(other.exec_, nullptr)), steps_(std::exchange(other.steps_, 0)) {}

DecodeGraph& DecodeGraph::operator=(DecodeGraph&& other) noexcept {
  if (this != &other) {
    if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
    exec_ = std::exchange(other.exec_, nullptr);
    steps_ = std::exchange(other.steps_, 0);
  }
  return *this;
}

DecodeGraph::~DecodeGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
}

Status DecodeGraph::replay(void* stream) const {
  if (exec_ == nullptr) return Status::failure("decode graph: nothing captured to replay");
  const cudaError_t e = cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess)
    return Status::failure(std::string("decode graph: launch failed: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  return Status::success();
}

}  // namespace larc::gpu
