// The kernel registry (DESIGN.md "Layering rules": one registry). A subject is a kernel under test:
// its name, the mechanism it implements, the dtypes and shapes it takes and a launcher. The gate,
// the fuzzer, diff, tests and benchmarks iterate this registry, so a kernel is checked everywhere by
// registering it once.
//
// Registering an out-of-tree kernel is one call, before running the gate (see runner.h / gate.h):
//
//   larc::harness::register_subject({
//       .name = "my-gdn-triton", .mechanism = "gdn",
//       .dtypes = {larc::harness::Dtype::bf16, larc::harness::Dtype::fp16},
//       .limits = {.max_T = 65536, .head_dims = {64, 128}},
//       .launch = [](const larc::harness::TensorMap& in, larc::harness::TensorMap& out) {
//         // in.at("q") ... are TypedTensors in the case's dtype, laid out as the mechanism's inputs
//         // (larc::harness::find_mechanism("gdn").inputs); out.at("o"), out.at("final_state") are
//         // allocated in their dtypes and poisoned with NaN: write every element.
//       }});
//
// The launcher must be deterministic (it runs twice; the outputs must be bitwise equal), must write
// every output element and nothing past the end (a NaN guard region follows every tensor), and may
// throw (the case then fails with the exception's message).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "larc/common/limits.h"
#include "larc/harness/grade.h"
#include "larc/harness/mechanism.h"

namespace larc::harness {

// What a subject takes (larc/common/limits.h): the largest sizes, the smallest K, the only head
// dimensions, grouped value heads (HV a multiple of H other than H; Shape::HV), packed sequences, an
// initial state, a read scale, and the chunk length of its arithmetic. A GPU kernel's limits become
// its subject's unchanged.
using larc::ShapeLimits;
bool limits_accept(const ShapeLimits& limits, const Shape& s);
std::string describe_limits(const ShapeLimits& limits);  // e.g. "16 ≤ K ≤ 128"; "any shape" without limits

using Launcher = std::function<void(const TensorMap& inputs, TensorMap& outputs)>;

struct Subject {
  std::string name;
  std::string mechanism;        // a registered mechanism (mechanisms())
  std::vector<Dtype> dtypes;    // the dtypes of its inputs and outputs (final states stay fp32)
  ShapeLimits limits;
  Launcher launch;
  std::string description;
  GradeDeclaration grades;      // the precision grade of each output and its chunk size (fp32 by default)
  // The knobs whose cases this subject cannot run unless they hold their defaults (initial_state,
  // scale_factor), and whether it can run `knobs`' case.
  std::vector<std::string> knobs_held_at_default() const;
  bool takes(const KnobValues& knobs) const;
  bool supports(Dtype d) const;
};

// Adds a subject. A subject is identified by (name, mechanism): one kernel family may register the
// same name for several mechanisms. Throws std::invalid_argument when the pair is taken, the name is
// empty, the mechanism is unknown, no dtype is given, the launcher is empty or the grades are not
// ones the mechanism can have (GradeDeclaration::validate).
void register_subject(Subject s);
// Every registered subject: the reference's own CPU forms first (reference_subjects.cpp: for every
// mechanism ref-serial-f32, ref-chunked-f32 and, where the family has one, ref-streamed-f32), then
// the registered ones in registration order.
const std::vector<Subject>& subjects();
// Throws std::invalid_argument listing the known subjects when (name, mechanism) is not registered.
const Subject& find_subject(std::string_view name, std::string_view mechanism);
// The reference's form `form` of mechanism `m` in float as a subject (what ref-<form>-f32 runs), with the
// gates `m` derives from its inputs under rounding draw `draw` ≥ 1 (Mechanism::compute_rounding_draw, which
// `m` must then have; named ref-<form>-f32-draw<draw>): the algorithm itself under another honest rounding.
Subject reference_float_subject(const Mechanism& m, ref::Form form, std::uint64_t draw = 0);

// On a machine with several GPUs, shard i of a gate or fuzz campaign runs its GPU subjects on device
// i mod (device count), so n shards started with the usual shard environment use n GPUs without a
// scheduler. Returns "GPU i of n", or "" where there are fewer than two devices (or no gpu/ build).
std::string assign_gpu_to_shard(std::uint64_t shard_index);

}  // namespace larc::harness
