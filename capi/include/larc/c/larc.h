/* larc's C interface (docs/python.md): the gate's cases, certified oracles and verdicts for a kernel
 * that runs elsewhere — a PyTorch, Triton or numpy callable driven from Python through ctypes. Plain C
 * with JSON strings and host buffers, so that one liblarc.so serves every Python 3 without its headers.
 *
 * Conventions. Every function catches every exception: a call that fails returns NULL (pointers) or
 * a nonzero status (int) and leaves a message naming the argument and the problem in
 * larc_last_error() (per thread). Strings returned as char* are the caller's, freed with
 * larc_string_free. JSON in: UTF-8 objects whose keys are documented per function; an unknown key
 * is refused naming it. Tensors: row-major, little-endian, contiguous. */
#ifndef LARC_C_LARC_H
#define LARC_C_LARC_H

#include <stddef.h>
#include <stdint.h>

#if defined(LARC_C_BUILDING)
#define LARC_C_API __attribute__((visibility("default")))
#else
#define LARC_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A prepared case: its spec, inputs in the case's dtype, the float64 oracle and its error estimate. */
typedef struct larc_case larc_case;
/* One candidate's verdict on a case. */
typedef struct larc_result larc_result;

/* A named tensor: dtype "bf16", "fp16", "fp32" or "fp64" (bf16/fp16 as their bit patterns). */
typedef struct {
  const char* name;
  const char* dtype;
  int32_t ndim;
  const int64_t* shape;
  const void* data;
  uint64_t nbytes;
} larc_tensor;

LARC_C_API const char* larc_version(void);
/* The git tree hash of reference/ + gpu/ this library was built from (LARC_TREE_HASH when set). */
LARC_C_API char* larc_tree_hash(void);
LARC_C_API const char* larc_last_error(void);
LARC_C_API void larc_string_free(char* s);

/* Every mechanism: {"mechanisms": [{"name", "description", "inputs": [{"name", "dims", "meaning",
 * "always_fp32", "optional", "min", "max"}], "outputs": [...], "knobs": [{"name", "lo", "hi",
 * "default", "log_scale", "integer", "meaning"}], "parameters": {...}, "io_form": bool}]}. */
LARC_C_API char* larc_mechanisms_json(void);

/* The gate's cases for a kernel: options {"mechanism" (required), "dtypes": ["bf16", ...], "grid":
 * bool, "shapes": ["B,T,H,K,V", ...] (empty: the default grid), "seed", "random": N, "knobs":
 * {name: value}, "fixtures": [paths], "limits": {"max_B", "max_T", "max_H", "max_K", "max_V", "min_K",
 * "head_dims": [...]}, "initial_state": bool (whether the kernel takes one)}. Returns {"cases":
 * [{"mechanism", "dtype", "shape", "seed", "knobs", "origin"}]}, origin "grid", "random" or a
 * fixture's path. */
LARC_C_API char* larc_plan_json(const char* options_json);

/* A case from a spec {"mechanism", "dtype", "shape", "seed", "knobs"}: inputs generated, oracle
 * computed. */
LARC_C_API larc_case* larc_case_prepare(const char* spec_json);
/* A case from the caller's inputs (in the spec's dtype; "shape" and "seed" are ignored): the oracle of
 * those inputs. */
LARC_C_API larc_case* larc_case_from_inputs(const char* spec_json, const larc_tensor* inputs, size_t n_inputs);
LARC_C_API larc_case* larc_case_read_fixture(const char* path);
/* Writes the case as a larc fixture; metadata_json: {key: string} added to its __metadata__. */
LARC_C_API int larc_case_write_fixture(const larc_case* c, const char* path, const char* metadata_json);
/* {"mechanism", "dtype", "shape", "seed", "knobs", "origin", "parameters", "oracle_method",
 * "inputs": [{"name", "dtype", "shape"}], "outputs": [{"name", "dtype", "shape", "time_axis"}]}. */
LARC_C_API char* larc_case_json(const larc_case* c);
/* A view of the case's tensor `name`: an input ("q"), "oracle.NAME" or "oracle_error.NAME" (fp64). The
 * view's pointers live as long as the case. */
LARC_C_API int larc_case_tensor(const larc_case* c, const char* name, larc_tensor* out);
LARC_C_API void larc_case_free(larc_case* c);

/* Judges a candidate's outputs (any float dtype; "o" required, other outputs optional) at the grades
 * config declares: {"kernel": name, "grade": "fp32" | "io" | "io:tf32" | "io:tf32-truncated",
 * "grade_of": ["OUTPUT=GRADE", ...], "grade_chunk": 64, "against": profile path, "k_reg": number,
 * "profile_subject": name, "errors": [what the caller found: nondeterminism, modified inputs, ...],
 * "deterministic": bool, "reproduce": command, "worst_timesteps": N}. */
LARC_C_API larc_result* larc_judge(const larc_case* c, const larc_tensor* outputs, size_t n_outputs,
                                   const char* config_json);
/* The gate's result JSON (docs/gate.md) plus, per output, "worst_timesteps": [{"t", "error",
 * "tolerance", "ratio"}] (the worst N of criterion 3, worst first). */
LARC_C_API char* larc_result_json(const larc_result* r);
LARC_C_API void larc_result_free(larc_result* r);

/* Judges a kernel on a candidate case while larc_shrink shrinks a failure: gets the candidate's spec
 * ({"mechanism", "dtype", "shape", "seed", "knobs", "origin"}: larc_case_prepare's), runs the kernel on
 * it and returns the verdict as the gate's result JSON (larc_result_json's; for a case the kernel could
 * not be judged on, one with "pass": false, "outputs": [] and the "errors"). The string is the caller's
 * and must stay valid until the callback is called again or larc_shrink returns. NULL gives no verdict:
 * the shrink stops there and larc_shrink fails. The callback must return: nothing may unwind through
 * it (catch every exception of the caller's language inside it). */
typedef const char* (*larc_shrink_judge)(const char* spec_json, void* user);

/* Shrinks a failing case with the fuzzer's shrinker (harness/fuzz.h shrink_failure): from failing_json
 * (the failure's result JSON, as larc_shrink_judge returns them) it tries T -> 1, T/2, T - 1, then B, H,
 * K, V the same way, then each knob toward its default, judging each candidate through `judge(spec,
 * user)`, and moves to the first that still fails with a failure kind of the original's (a kernel that
 * raises on a smaller case does not count as failing it like a tolerance violation does); until no
 * candidate does. options: {"max_evaluations": N (candidates judged at most; 200), "limits": the
 * kernel's shape limits (larc_plan_json's), which every candidate satisfies}. Returns {"path": [the spec
 * of each accepted reduction, in order; the last is the shrunk case, none when nothing smaller fails],
 * "evaluations": N}; NULL when an argument is wrong or the callback gave no verdict (larc_last_error
 * names the candidate). */
LARC_C_API char* larc_shrink(const char* failing_json, const char* options_json, larc_shrink_judge judge, void* user);

/* Writes an accuracy-regression profile of the results (docs/gate.md). */
LARC_C_API int larc_profile_record(const larc_result* const* results, size_t n, const char* path);

/* Writes tensors as a safetensors file (a candidate for `larc diff`); metadata_json: {key: string}. */
LARC_C_API int larc_candidate_write(const char* path, const larc_tensor* tensors, size_t n, const char* metadata_json);

#ifdef __cplusplus
}
#endif

#endif /* LARC_C_LARC_H */
