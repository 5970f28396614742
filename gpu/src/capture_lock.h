// Stream capture beside the process's device-wide operations. While any stream of the process is being
// captured into a graph, CUDA refuses what would wait on it (a device synchronisation, cudaFree's implicit
// one, synchronous copies and fills) and invalidates the capture. The decode-graph kernels capture on a
// private stream (delta_rule_decode_graph.cu) while other host threads, the gate's workers, may
// synchronise or free: a capture holds this lock exclusively, and gpu/'s own device-wide calls (memory.cu)
// hold it shared, so neither meets the other.
#pragma once

#include <shared_mutex>

namespace larc::gpu::detail {

std::shared_mutex& capture_mutex();

}  // namespace larc::gpu::detail
