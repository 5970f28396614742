// The tolerance policy of the gate, implemented once (DESIGN.md "Tolerance policy"; docs/gate.md).
//
// An output in dtype D is judged against the float64 oracle O together with the same-precision
// baseline Z: the reference computed from the same D-rounded inputs in float, output rounded to D.
// The reference has several algorithms (serial, chunked with C = 64, streamed), and they do not
// round alike: in float the chunked (UT/WY) form's per-timestep errors lie well above the serial's at
// some timesteps, so against the serial form alone the reference's own chunked form fails (measured
// in docs/gate.md "The tolerance policy"). Per slice, e_t(Z) is therefore the largest error among the
// reference's float forms: the level honest arithmetic in D's accumulation type reaches.
// Slices: one per timestep t (all other coordinates of the output), or one slice for outputs without
// a time axis (final states). With e_t(X) = ‖X_t − O_t‖₂ and floor F_t = ‖max(u_D·|O_t|, η_D/2)‖₂ per
// element (the most that rounding the oracle itself to D can cost: u_D|o| in D's normal range, half D's
// smallest subnormal η_D below it, so that an output that underflows D is judged to its own quantum),
// the subject Y passes iff
//   (1) every element was written (outputs are poisoned with NaN before the subject runs);
//   (2) Y is finite wherever O is finite;
//   (3) per timestep:  e_t(Y) ≤ k · max_{s ∈ w(t)} e_s(Z) + F_t, where w(t) is the trailing window
//       of W timesteps ending at t: the baseline's error level at t. (Against e_t(Z) alone, honest
//       float kernels fail: per-timestep rounding errors of two implementations fluctuate against
//       each other; tests/harness/tolerance_policy_test.cpp measures it, docs/gate.md gives the figures.)
//   (4) per trailing window w of W timesteps:  ‖e_w(Y)‖₂ ≤ k · ‖e_w(Z)‖₂ + ‖F_w‖₂;
//   (5) the baseline is finite wherever O is (otherwise the case lies outside D's range and no
//       verdict is possible: it fails, naming the cause).
// k = 2 (FlashAttention's factor), W = 64. Whole-tensor cosine or relative RMS is never the
// criterion: a state carry scaled by 0.99 over 16k steps keeps cosine > 0.9999 (tests/
// harness/tolerance_policy_test.cpp measures it) and is caught by (3) and (4).
// The oracle certifies itself: its per-slice error estimate must lie `oracle_margin` (1000) times
// below the tolerance of that slice; the runner escalates a rung when it does not (runner.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "larc/harness/typed_tensor.h"

namespace larc::harness {

struct ToleranceConfig {
  double k = 2.0;
  double k_gradient = 3.0;  // k of gradient outputs (FlashAttention's gradient factor; docs/gate.md "Gradient policy")
  std::int64_t window = 64;
  double oracle_margin = 1000.0;
  // The rounding draws of a mechanism's derived gates its float baselines also run under, where it has
  // them (Mechanism::compute_rounding_draw): per slice the largest error over forms and draws counts.
  std::uint64_t rounding_draws = 8;
};

// One output of one case as the policy sees it; the pointers must outlive judge().
struct OutputUnderTest {
  std::string name;
  Dtype dtype = Dtype::fp32;             // the output's dtype: its floor and ULPs
  int time_axis = -1;                    // index of T in the shape, -1: see leading_axes
  // Without a time axis: one slice per coordinate of the first leading_axes axes (0: the whole tensor
  // is one slice; 2 for dh0 [B,H,K,V]: one slice per (sequence, head)).
  int leading_axes = 0;
  // A gradient (docs/gate.md "Gradient policy"): k_gradient instead of k, and windows [t, t + W)
  // looking toward later t, where the reverse recurrence carries its errors from (the last W for the
  // last W timesteps).
  bool gradient = false;
  const ref::Tensor<double>* subject = nullptr;
  const std::vector<bool>* unwritten = nullptr;  // elements still holding the poison (null: all written)
  const ref::Tensor<double>* oracle = nullptr;
  // The same-precision baselines (the reference's float forms, and where the mechanism derives gates from
  // its inputs the same forms under rounding draws of them); per slice the largest error counts.
  std::vector<const ref::Tensor<double>*> baselines;
  std::vector<double> oracle_error;      // per slice: ‖oracle error estimate‖₂ (required: empty fails)
};

struct Judgement {
  std::string output;
  Dtype dtype = Dtype::fp32;
  bool pass = true;
  std::vector<std::string> violations;  // the first few of each kind, readable

  // What caught it (counts of violated elements, timesteps, windows).
  std::int64_t unwritten = 0, non_finite = 0, baseline_non_finite = 0, timestep_violations = 0,
               window_violations = 0;

  // Figures (errors against the oracle; "rel" relative to ‖O‖ of the same slice or tensor).
  double rel_rms = 0, baseline_rel_rms = 0;      // ‖Y − O‖_F / ‖O‖_F, the same for Z
  double max_abs_err = 0, baseline_max_abs_err = 0;
  double max_rel_err = 0, baseline_rel_err = 0;  // worst slice: max_t e_t(Y)/‖O_t‖, max_t e_t(Z)/‖O_t‖
  double worst_ratio = 0;                        // max over timesteps and windows of error / tolerance (≤ 1 passes)
  std::int64_t worst_timestep = -1;              // slice of the worst per-timestep ratio
  std::vector<std::int64_t> worst_coordinate;    // coordinate of max |Y − O|
  double max_ulps = 0;                           // max |Y − O| in units of D's spacing at O
  double cosine = 1;                             // whole-tensor cosine(Y, O): reported, never a criterion
  double whole_tensor_ratio = 0;                 // ‖Y − O‖_F / (k‖Z − O‖_F + ‖F‖_F): reported, never a criterion
  double oracle_margin = 0;                      // min over slices of tolerance / oracle error (inf when exact)
  bool oracle_certified = false;                 // oracle_margin ≥ config.oracle_margin (else the case fails)

  double oracle_norm = 0;                        // ‖O‖_F over finite elements (names the oracle in profiles)
  // Per slice: e_t(Y) and the floor F_t = ‖max(u_D|O_t|, η_D/2)‖ (what an accuracy-regression profile records),
  // and criterion (3)'s tolerance k · max_{s ∈ w(t)} e_s(Z) + F_t (a failure's worst timesteps).
  std::vector<double> slice_error, slice_floor, slice_tolerance;

  // Precision grades (grade.h), filled by the runner: the grade the verdict is at (the declared one),
  // the strictest grade the output meets ("none" when it meets none the case admits), and for each
  // grade evaluated whether it passes there, its worst ratio and that grade's baseline error.
  struct GradeFigures {
    bool pass = false;
    double worst_ratio = 0, baseline_rel_err = 0;
  };
  std::string grade_declared = "fp32", grade_met;
  // Where the mechanism has several float forms (serial and chunked; for a gradient twin, the direct and
  // the chunk-local decay gradient): each form's own worst-slice relative error, by form name. Their
  // spread is the output's conditioning: how far apart honest float computations of it lie.
  std::map<std::string, double, std::less<>> baseline_errors;
  // Against an accuracy-regression profile (profile.h; -1 when none was given): the worst ratio to
  // the regression tolerance and the largest growth of e_t over the recorded error.
  double profile_ratio = -1, profile_growth = -1;
  std::map<std::string, GradeFigures, std::less<>> grades;
};

Judgement judge(const OutputUnderTest& out, const ToleranceConfig& config = {});

// ‖x_t‖₂ per slice (per timestep of `time_axis`, or for -1 per coordinate of the first
// `leading_axes` axes).
std::vector<double> slice_norms(const ref::Tensor<double>& x, int time_axis, int leading_axes = 0);
// The spacing of dtype D's numbers at |x| (subnormal spacing below the smallest normal).
double ulp_of(Dtype d, double x);
// "(b, t, h, d)"-style coordinate of a flat row-major index.
std::vector<std::int64_t> coordinate_of(const std::vector<std::int64_t>& shape, std::size_t flat);
// "(0, 3, 1, 2)".
std::string coordinate_string(const std::vector<std::int64_t>& coordinate);

}  // namespace larc::harness
