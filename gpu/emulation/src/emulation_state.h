// What the emulated launches share with the emulated runtime (runtime_emulation.cpp): the host
// thread's last error and the streams being captured into graphs.
#pragma once

#include <functional>

#include "cuda_runtime.h"

namespace larc::gpu::emulation {

// Whether the emulated device is present (LARC_EMULATE_GPU=1): without it every call that needs a
// device fails with cudaErrorNoDevice, as the runtime does on a machine without a GPU.
bool device_present();

// Sets the calling host thread's last error (what cudaGetLastError returns and clears); returns e.
cudaError_t set_last_error(cudaError_t e);

// If `stream` is being captured, appends `replay` to its graph and returns true.
bool record_if_capturing(cudaStream_t stream, std::function<cudaError_t()> replay);

}  // namespace larc::gpu::emulation
