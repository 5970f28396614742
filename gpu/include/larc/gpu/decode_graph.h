// Multi-step decode of the fused recurrent kernels replayed from one CUDA graph
// (docs/gpu-kernels/delta-rule.md, "Multi-step decode"). A decode step is a one-token launch of a
// mechanism's fused recurrent kernel; a DecodeGraph captures a chain of them once, each step a
// programmatic dependent launch (PDL) of the one before, and replays the chain on the caller's stream
// as often as asked: no launch from the host per step, and each step's start and input loads overlap
// the tail of the step before. Like api.h it includes no CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "larc/gpu/api.h"

namespace larc::gpu {

// The mechanisms with a decode graph: la, deltanet, gdn, kla, gla (la-ratio is not one: its
// normaliser is read by every value tile of a head and written by the first, so it cannot be
// updated in place).
bool has_decode_graph(std::string_view mechanism);

// The largest number of steps one graph holds (the registered *-decode-graph kernels' limits.max_T).
inline constexpr std::int64_t kMaxDecodeGraphSteps = 4096;

class DecodeGraph {
 public:
  // Captures one step per element of `steps`, in order: each a launch of `mechanism`'s fused recurrent
  // kernel with T = 1 in that kernel's tensors (validated as it validates them; the stream is ignored),
  // step s + 1 a programmatic dependent of step s, which it waits for before it reads a state or
  // writes anything. Steps may share their states: initial_state and final_state may be one tensor,
  // updated in place, and step s + 1 may read the state step s wrote. The step inputs (q, k, v and the
  // gates) must not overlap any step's outputs (o, the states): a step loads its inputs while the step
  // before it may still run. The tensors must stay allocated while the graph may run. A failed
  // validation or capture leaves the graph empty and sets `status`.
  static DecodeGraph capture(std::string_view mechanism, const std::vector<LaunchArgs>& steps, Status& status);

  DecodeGraph() = default;
  DecodeGraph(DecodeGraph&& other) noexcept;
  DecodeGraph& operator=(DecodeGraph&& other) noexcept;
  DecodeGraph(const DecodeGraph&) = delete;
  DecodeGraph& operator=(const DecodeGraph&) = delete;
  ~DecodeGraph();

  // Enqueues every step on `stream` (a cudaStream_t; nullptr: the default stream), after the work
  // enqueued there before; returns without synchronising.
  Status replay(void* stream) const;
  std::size_t steps() const { return steps_; }

 private:
  void* exec_ = nullptr;  // cudaGraphExec_t
  std::size_t steps_ = 0;
};

}  // namespace larc::gpu
