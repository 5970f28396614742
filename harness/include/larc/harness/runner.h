// The case runner (DESIGN.md "Tolerance policy"): a case is (subject, mechanism, dtype, shape, seed,
// knobs). Its inputs are generated in float64 and rounded to the dtype; the oracle is the reference
// computed from those rounded inputs at dd (≈106 bits) and certifies itself with an error estimate
// (|dd − double|, escalated to |dd − float128| where that is not 1000× below the tolerance); the
// same-precision baselines are the reference's forms (serial, chunked, streamed; not the O(T²)
// materialised one) in float on the same inputs, outputs rounded to their dtype (for the gradient twins
// that derive gates from their inputs, also under rounding draws of those gates: tolerance.h). The subject
// runs twice on outputs poisoned with NaN; the two runs must agree bit for bit, and the outputs are
// judged by the tolerance policy (tolerance.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "larc/harness/mechanism.h"
#include "larc/harness/subject.h"
#include "larc/harness/tolerance.h"

namespace larc::harness {

struct CaseSpec {
  std::string subject;    // kernel name (JSON "kernel")
  std::string mechanism;
  Dtype dtype = Dtype::fp32;
  Shape shape;
  std::uint64_t seed = 1;  // the seed the inputs are generated from
  KnobValues knobs;        // every knob of the mechanism (Mechanism::resolve_knobs)
  std::string origin = "grid";  // "grid", "random", or the fixture file the inputs came from
  // The command that runs this case alone.
  std::string reproduce() const;
};

// A case's inputs and what subjects are judged against; shared by every subject of the same
// (mechanism, dtype, shape, seed, knobs).
struct PreparedCase {
  CaseSpec spec;
  TensorMap inputs;   // in spec.dtype, shaped as the mechanism's inputs
  ValueMap oracle;    // float64 oracle outputs
  std::map<std::string, std::vector<double>> oracle_error;  // per output, per slice (tolerance.h)
  std::string oracle_method;  // how oracle_error was estimated
};

// Every output of `m` for shape `s` but the optional ones, allocated in its dtype (the case's, or fp32 for
// final states) and poisoned with NaN; for a prepared case, also the optional outputs its oracle has (a
// gradient of an optional input the case holds): what a subject's launcher receives.
TensorMap poisoned_outputs(const Mechanism& m, const Shape& s, Dtype dtype);
TensorMap poisoned_outputs(const Mechanism& m, const PreparedCase& p);

// Generates the inputs of `spec` and computes the oracle and its error estimate. A size below 1 or a
// tensor past kMaxTensorElements throws std::invalid_argument naming it.
PreparedCase prepare_case(const CaseSpec& spec);
// The same with the given inputs (float64, each rounded here to its tensor's dtype) in place of the
// generator's: a case in a regime no knob reaches (the accuracy report's strong decays).
PreparedCase prepare_case(const CaseSpec& spec, const ValueMap& values);
// The oracle and its estimate for inputs given in the case's dtype (used by prepare_case and by
// `larc fixtures gen`). Here and in run_subject and judge_candidate, inputs that are missing,
// misshapen, non-finite or out of their range (a log-decay above 0, β outside [0, 1]) throw
// std::invalid_argument naming the input (Mechanism::shape_of).
void compute_oracle(PreparedCase& prepared);

struct CaseResult {
  CaseSpec spec;
  bool pass = false;
  std::vector<std::string> errors;   // every violation and failure, readable
  std::vector<Judgement> outputs;    // one per output judged
  bool deterministic = true;         // two runs gave bitwise equal outputs
  std::string oracle_method;
  double seconds = 0;
  // Non-empty when the case was not judged because no subject can return it (outside_range): pass is
  // true then, and reports count the case as skipped.
  std::string skipped;
  // The judgement of the main output ("o"; a gradient twin's first gradient), or nullptr when it was
  // not judged.
  const Judgement* main_output() const;
};

// Empty, or why the case lies outside its dtypes' range: an output whose oracle, rounded to the output's
// dtype, is infinite where the oracle is finite (an fp16 gradient past 65504), named with where and how
// large. No subject can return such a case, so it is skipped, not judged.
std::string outside_range(const PreparedCase& prepared);

// Runs the subject on the prepared case and judges it at the grades it declares (subject.mechanism
// must be the case's); a case outside_range is skipped without running it.
CaseResult run_subject(const PreparedCase& prepared, const Subject& subject, const ToleranceConfig& config = {});
// Judges outputs computed elsewhere (`larc diff`; a case outside_range is skipped): every output of the mechanism present in
// `candidate` is judged; the main output ("o") is required, and for a gradient twin every gradient;
// values of any float dtype are taken as they are.
// The verdict of each output is at the grade `grades` declares for it (grade.h).
CaseResult judge_candidate(const PreparedCase& prepared, const TensorMap& candidate, const GradeDeclaration& grades = {},
                           const ToleranceConfig& config = {});
// prepare_case + run_subject.
CaseResult run_case(const CaseSpec& spec, const ToleranceConfig& config = {});

}  // namespace larc::harness
