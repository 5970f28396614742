// The GPU kernels of gpu/'s registry as subjects of the harness's registry (DESIGN.md "One kernel
// registry"): each kernel whose mechanism the harness knows becomes a subject with the kernel's name,
// dtypes and limits. gpu_subjects.cpp defines these where gpu/ is built, and registers the kernels only
// where a device is present, so the gate, fuzz and tests see GPU subjects exactly on a GPU machine;
// no_gpu_subjects.cpp defines them empty everywhere else (a CPU-only build, liblarc.so).
#pragma once

#include <vector>

#include "larc/harness/subject.h"

namespace larc::harness::detail {

void register_gpu_subjects(std::vector<Subject>& out);

// Makes every later GPU subject launch, from any thread, run on device shard_index mod the device
// count; returns "GPU i of n", or "" with fewer than two devices.
std::string assign_gpu_to_shard(std::uint64_t shard_index);

}  // namespace larc::harness::detail
