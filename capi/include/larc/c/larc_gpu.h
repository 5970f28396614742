/* larc's own CUDA kernels from any language (Python: larc.gpu, docs/python.md "larc's kernels from
 * torch"): the kernel registry of larc/gpu/api.h and a launch on device memory and a stream the caller
 * owns. In liblarc_gpu.so, built where CUDA is; it holds the kernels and nothing of the harness.
 * Strings the library returns are the caller's, freed with larc_gpu_string_free. */
#ifndef LARC_C_LARC_GPU_H
#define LARC_C_LARC_GPU_H

#if defined(LARC_GPU_C_BUILDING)
#define LARC_GPU_C_API __attribute__((visibility("default")))
#else
#define LARC_GPU_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The registry as JSON: [{"name", "mechanism", "description", "dtypes": ["bf16", ...], "limits":
 * {"max_K", "max_V", "max_T", "min_K", "head_dims", "varlen", "initial_state", "scale",
 * "value_head_groups"}}, ...], in gpu/'s order. Needs no device. */
LARC_GPU_C_API char* larc_gpu_kernels_json(void);

/* Enqueues kernel `name` of `mechanism` on `stream` (a cudaStream_t or CUstream; NULL: the default
 * stream) of device `device`, with the tensors of `args_json`:
 *   {"inputs":  {"q": {"data": <device address>, "dtype": "bf16", "shape": [B, T, H, K],
 *                      "strides": [...] (optional, elements; row-major when absent)}, ...},
 *    "outputs": {"o": {...}, ...},
 *    "scale": 0.125 (optional: the read scale of a kernel that takes one)}
 * dtypes "bf16", "fp16", "fp32", "int32", "int64". Returns without synchronising. Returns NULL when
 * the launch was enqueued, else a message naming the kernel and what was wrong (an unknown kernel, a
 * malformed argument, the launcher's validation: nothing is launched then). */
LARC_GPU_C_API char* larc_gpu_launch(const char* name, const char* mechanism, int device, void* stream, const char* args_json);

LARC_GPU_C_API void larc_gpu_string_free(char* s);

#ifdef __cplusplus
}
#endif

#endif
