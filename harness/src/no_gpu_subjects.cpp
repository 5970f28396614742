// The GPU-subject hooks of gpu_subjects.h where no GPU kernel is linked: a build without CUDA, and
// liblarc.so (capi/), which gates callables from Python and never launches larc's kernels.
#include "gpu_subjects.h"

namespace larc::harness::detail {

void register_gpu_subjects(std::vector<Subject>&) {}

std::string assign_gpu_to_shard(std::uint64_t) { return ""; }

}  // namespace larc::harness::detail
