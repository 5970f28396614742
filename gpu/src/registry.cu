// The kernel registry (api.h, DESIGN.md "One kernel registry").
#include "families.h"

namespace larc::gpu {

const std::vector<Kernel>& kernels() {
  static const std::vector<Kernel> all = [] {
    std::vector<Kernel> out;
    detail::append_delta_rule_kernels(out);
    detail::append_delta_rule_decode_graph_kernels(out);
    detail::append_log_linear_kernels(out);
    detail::append_hla_kernels(out);
    detail::append_vla_kernels(out);
    detail::append_ccq_kernels(out);
    detail::append_delta_rule_chunked_kernels(out);
    detail::append_log_linear_chunked_kernels(out);
    detail::append_hla_chunked_kernels(out);
    detail::append_ahla_chunked_kernels(out);
    detail::append_log_linear_gdn_chunked_kernels(out);
    detail::append_vla_chunked_kernels(out);
    detail::append_delta_rule_backward_kernels(out);
    detail::append_delta_rule_chunked_backward_kernels(out);
    detail::append_log_linear_backward_kernels(out);
    return out;
  }();
  return all;
}

}  // namespace larc::gpu
