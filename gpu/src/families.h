// One function per kernel family appends that family's kernels to the registry (registry.cu). An
// explicit list, not static registrars: objects of a static library that nothing references are
// dropped by the linker, and their registrations with them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hla_inputs.h"
#include "vla_inputs.h"
#include "larc/gpu/api.h"

namespace larc::gpu::detail {

// A delta-rule-family kernel's registry entry (delta_rule_fused.cu, delta_rule_chunked.cu): bf16, fp16
// and fp32, K ≤ max_K, an initial state and a read scale, varlen when it takes cu_seqlens.
inline Kernel delta_rule_entry(std::string name, std::string mechanism, std::string description, bool varlen,
                               std::int64_t max_K, std::function<Status(const LaunchArgs&)> launch) {
  Kernel k;
  k.name = std::move(name);
  k.mechanism = std::move(mechanism);
  k.description = std::move(description);
  k.dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
  k.limits.max_K = max_K;
  k.limits.varlen = varlen;
  k.launch = std::move(launch);
  return k;
}

// A chunked delta-rule kernel (gdn/kla-chunked and their backwards) to register with its varlen twin:
// launch(args, name, varlen) runs it, io declares the io grade.
struct TwinnedKernel {
  Status (*launch)(const LaunchArgs&, const std::string&, bool);
  bool io;
  std::string name, mechanism, description;
};

// Appends every kernel, then every varlen twin (`name`-varlen: FLA's cu_seqlens, B = 1): delta_rule_entry's
// with K ≤ max_K, grouped value heads and the chunk length.
inline void append_with_varlen_twins(std::vector<Kernel>& out, std::int64_t max_K, std::int64_t chunk,
                                     const std::vector<TwinnedKernel>& kernels) {
  const auto entry = [&](const TwinnedKernel& t, const std::string& name, std::string description, bool varlen) {
    Kernel k = delta_rule_entry(name, t.mechanism, std::move(description), varlen, max_K,
                                [launch = t.launch, name, varlen](const LaunchArgs& args) { return launch(args, name, varlen); });
    k.limits.value_head_groups = true;
    k.limits.chunk = chunk;
    k.io_grade = t.io;
    return k;
  };
  for (const TwinnedKernel& k : kernels) out.push_back(entry(k, k.name, k.description, false));
  for (const TwinnedKernel& k : kernels)
    out.push_back(entry(k, k.name + "-varlen", k.name + " over packed sequences (FLA cu_seqlens, B = 1)", true));
}

// An HLA-family kernel's registry entry (hla_fused.cu, hla_chunked.cu, ahla_chunked.cu): bf16, fp16 and
// fp32, K ≤ kHlaMaxK, no state in or out, no read scale; `chunk` for the chunked ones.
inline Kernel hla_entry(std::string name, std::string mechanism, std::string description,
                        std::function<Status(const LaunchArgs&)> launch, std::int64_t chunk = 0) {
  Kernel k;
  k.name = std::move(name);
  k.mechanism = std::move(mechanism);
  k.description = std::move(description);
  k.dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
  k.limits.max_K = kHlaMaxK;
  k.limits.initial_state = false;
  k.limits.scale = false;
  k.limits.chunk = chunk;
  k.launch = std::move(launch);
  return k;
}

// A log-linear kernel's registry entry (log_linear_fused.cu, log_linear_chunked.cu,
// log_linear_gdn_chunked.cu): bf16, fp16 and fp32, K ≤ 128 (validate_log_linear), T ≤ max_T, no state,
// no read scale; `chunk` for the chunked ones.
inline Kernel log_linear_entry(std::string name, std::string mechanism, std::string description, std::int64_t max_T,
                               std::function<Status(const LaunchArgs&)> launch, std::int64_t chunk = 0) {
  Kernel k;
  k.name = std::move(name);
  k.mechanism = std::move(mechanism);
  k.description = std::move(description);
  k.dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
  k.limits.max_K = 128;
  k.limits.max_T = max_T;
  k.limits.initial_state = false;
  k.limits.scale = false;
  k.limits.chunk = chunk;
  k.launch = std::move(launch);
  return k;
}

// A VLA kernel's registry entry (vla_fused.cu, vla_chunked.cu): K ≤ kVlaMaxK, no initial state, no read
// scale.
inline Kernel vla_entry(std::string name, std::string description, std::vector<Dtype> dtypes,
                        std::function<Status(const LaunchArgs&)> launch) {
  Kernel k;
  k.name = std::move(name);
  k.mechanism = "vla";
  k.description = std::move(description);
  k.dtypes = std::move(dtypes);
  k.limits.max_K = kVlaMaxK;
  k.limits.initial_state = false;
  k.limits.scale = false;
  k.launch = std::move(launch);
  return k;
}

void append_delta_rule_kernels(std::vector<Kernel>& out);  // delta_rule_fused.cu: la, la-ratio, deltanet, gdn, kla, gla
void append_delta_rule_decode_graph_kernels(std::vector<Kernel>& out);  // delta_rule_decode_graph.cu: la, deltanet, gdn, kla, gla -decode-graph
void append_log_linear_kernels(std::vector<Kernel>& out);  // log_linear_fused.cu: log-linear, log-linear-gdn
void append_hla_kernels(std::vector<Kernel>& out);  // hla_fused.cu: hla, hla-normalized, ahla
void append_vla_kernels(std::vector<Kernel>& out);  // vla_fused.cu: vla
void append_ccq_kernels(std::vector<Kernel>& out);  // ccq_fused.cu: ccq-gla, ccq-gdn
void append_delta_rule_chunked_kernels(std::vector<Kernel>& out);  // delta_rule_chunked.cu: gdn-chunked, kla-chunked
void append_log_linear_chunked_kernels(std::vector<Kernel>& out);  // log_linear_chunked.cu: log-linear-chunked
void append_hla_chunked_kernels(std::vector<Kernel>& out);  // hla_chunked.cu: hla, hla-normalized
void append_ahla_chunked_kernels(std::vector<Kernel>& out);  // ahla_chunked.cu: ahla
void append_log_linear_gdn_chunked_kernels(std::vector<Kernel>& out);  // log_linear_gdn_chunked.cu: log-linear-gdn
void append_vla_chunked_kernels(std::vector<Kernel>& out);  // vla_chunked.cu: vla
void append_delta_rule_backward_kernels(std::vector<Kernel>& out);  // delta_rule_backward.cu: la, deltanet, gdn, kla, gla -backward
void append_delta_rule_chunked_backward_kernels(std::vector<Kernel>& out);  // delta_rule_chunked_backward.cu: gdn, kla -backward
void append_log_linear_backward_kernels(std::vector<Kernel>& out);  // log_linear_fused_backward.cu: log-linear, log-linear-gdn -backward

}  // namespace larc::gpu::detail
