#include "larc/harness/tolerance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace larc::harness {

namespace {
constexpr std::size_t kMessagesPerKind = 3;

struct SliceLayout {
  std::int64_t count = 1;  // number of slices
  std::int64_t inner = 1;  // elements after the time axis
  std::int64_t slice_of(std::size_t flat) const { return count == 1 ? 0 : static_cast<std::int64_t>(flat / inner) % count; }
};

SliceLayout layout_of(const std::vector<std::int64_t>& shape, int time_axis, int leading_axes) {
  SliceLayout l;
  if (time_axis < 0) {  // one slice per coordinate of the leading axes: flat / inner
    if (leading_axes > static_cast<int>(shape.size())) throw std::invalid_argument("leading slice axes beyond the tensor's rank");
    for (int i = 0; i < leading_axes; ++i) l.count *= shape[i];
    for (std::size_t i = leading_axes; i < shape.size(); ++i) l.inner *= shape[i];
    return l;
  }
  if (time_axis >= static_cast<int>(shape.size())) throw std::invalid_argument("time axis beyond the tensor's rank");
  l.count = shape[time_axis];
  for (std::size_t i = time_axis + 1; i < shape.size(); ++i) l.inner *= shape[i];
  return l;
}

std::string num(double x) {
  std::ostringstream o;
  o.precision(3);
  o << x;
  return o.str();
}

int digits_of(Dtype d) {
  switch (d) {
    case Dtype::bf16: return 8;
    case Dtype::fp16: return 11;
    case Dtype::fp32: return 24;
    default: break;  // fp64; judged outputs are floating-point (TypedTensor)
  }
  return 53;
}
int min_exponent_of(Dtype d) {  // frexp convention: smallest normal is 2^(min_exponent − 1)
  switch (d) {
    case Dtype::bf16:
    case Dtype::fp32: return -125;
    case Dtype::fp16: return -13;
    default: break;  // fp64
  }
  return -1021;
}
// Where a window's baseline error comes mostly from one slice (a gradient growing by orders of magnitude
// across it), the window compares in effect that slice alone: name it, with the subject's and the
// baseline's errors there, for triage (docs/gate.md, "Windows of one effective slice"). One slice's ratio
// is not a verdict: one lucky baseline rounding can make it large.
std::string largest_slice(const std::vector<double>& ey, const std::vector<double>& ez, std::size_t w0, std::size_t w1,
                          double wz) {
  std::size_t top = w0;
  for (std::size_t s = w0; s <= w1; ++s)
    if (ez[s] > ez[top]) top = s;
  if (wz <= 0 || ez[top] * ez[top] < 0.5 * wz) return "";
  return "; " + num(100 * ez[top] * ez[top] / wz) + " % of the baseline's error is at timestep " + std::to_string(top) +
         ", where the error is " + num(ey[top]) + " against the baseline's " + num(ez[top]) + " (" +
         num(ey[top] / ez[top]) + "×)";
}
}  // namespace

// D's spacing at x: at x = 0 (frexp's exponent 0) and anywhere below D's smallest normal, the smallest
// subnormal η_D.
double ulp_of(Dtype d, double x) {
  int e = 0;
  std::frexp(std::fabs(x), &e);
  return std::ldexp(1.0, (x == 0 ? min_exponent_of(d) : std::max(e, min_exponent_of(d))) - digits_of(d));
}

std::vector<std::int64_t> coordinate_of(const std::vector<std::int64_t>& shape, std::size_t flat) {
  std::vector<std::int64_t> c(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    c[i] = static_cast<std::int64_t>(flat % static_cast<std::size_t>(shape[i]));
    flat /= static_cast<std::size_t>(shape[i]);
  }
  return c;
}

std::vector<double> slice_norms(const ref::Tensor<double>& x, int time_axis, int leading_axes) {
  const SliceLayout l = layout_of(x.shape, time_axis, leading_axes);
  std::vector<double> sq(static_cast<std::size_t>(l.count), 0.0);
  for (std::size_t i = 0; i < x.data.size(); ++i) sq[l.slice_of(i)] += x.data[i] * x.data[i];
  for (double& s : sq) s = std::sqrt(s);
  return sq;
}

Judgement judge(const OutputUnderTest& out, const ToleranceConfig& cfg) {
  if (!out.subject || !out.oracle || out.baselines.empty())
    throw std::invalid_argument("judge: subject, oracle and at least one baseline are required");
  const auto& Y = *out.subject;
  const auto& O = *out.oracle;
  std::vector<const ref::Tensor<double>*> tensors{&Y};
  tensors.insert(tensors.end(), out.baselines.begin(), out.baselines.end());
  for (const auto* t : tensors)
    if (!t || t->shape != O.shape)
      throw std::invalid_argument(out.name + ": expected shape " + ref::shape_string(O.shape) + " (the oracle's), got " +
                                  (t ? ref::shape_string(t->shape) : std::string("none")));
  if (out.unwritten && out.unwritten->size() != O.data.size())
    throw std::invalid_argument(out.name + ": unwritten mask has the wrong size");

  Judgement j;
  j.output = out.name;
  j.dtype = out.dtype;
  const SliceLayout l = layout_of(O.shape, out.time_axis, out.leading_axes);
  const auto n_slices = static_cast<std::size_t>(l.count);
  if (!out.oracle_error.empty() && out.oracle_error.size() != n_slices)
    throw std::invalid_argument(out.name + ": oracle error estimate has " + std::to_string(out.oracle_error.size()) +
                                " slices, expected " + std::to_string(n_slices));
  auto note = [&](std::int64_t count, const std::string& msg) {
    if (count <= static_cast<std::int64_t>(kMessagesPerKind)) j.violations.push_back(out.name + ": " + msg);
  };
  auto where = [&](std::size_t i) { return coordinate_string(coordinate_of(O.shape, i)); };

  // The baseline's error per slice: the largest of the baselines' (the level honest arithmetic in
  // D's accumulation type reaches with the reference's algorithms).
  std::vector<double> ez(n_slices, 0);
  for (const ref::Tensor<double>* Z : out.baselines) {
    std::vector<double> e(n_slices, 0);
    for (std::size_t i = 0; i < O.data.size(); ++i) {
      const double o = O.data[i], z = Z->data[i];
      if (!std::isfinite(o)) continue;
      if (!std::isfinite(z)) {
        note(++j.baseline_non_finite, "the same-precision baseline is " + num(z) + " at " + where(i) +
                                          ": the case lies outside " + std::string(ref::dtype_name(out.dtype)) + "'s range");
        continue;
      }
      e[l.slice_of(i)] += (z - o) * (z - o);
      j.baseline_max_abs_err = std::max(j.baseline_max_abs_err, std::fabs(z - o));
    }
    for (std::size_t s = 0; s < n_slices; ++s) ez[s] = std::max(ez[s], std::sqrt(e[s]));
  }

  // The floor per element: the most that rounding the oracle itself to D can cost, u_D|o| in D's normal
  // range and half D's smallest subnormal η_D below it, where D's spacing is η_D: an output that underflows
  // D is judged to its own quantum, not to u_D|o| (docs/gate.md "The tolerance policy").
  const double u = ref::dtype_unit_roundoff(out.dtype), half_quantum = ulp_of(out.dtype, 0) / 2;

  // The subject: written, finite, squared errors per slice, figures over the whole tensor.
  std::vector<double> ey(n_slices, 0), eo(n_slices, 0), ef(n_slices, 0);
  double sum_y2 = 0, sum_o2 = 0, dot_yo = 0, norm_y2 = 0;
  for (std::size_t i = 0; i < O.data.size(); ++i) {
    const double o = O.data[i], y = Y.data[i];
    const std::size_t s = static_cast<std::size_t>(l.slice_of(i));
    if (out.unwritten && (*out.unwritten)[i]) {
      note(++j.unwritten, "element " + where(i) + " was never written");
      continue;
    }
    if (!std::isfinite(o)) {  // outside the domain the oracle can judge: only the identical value passes
      if (!(y == o)) note(++j.non_finite, "the oracle is " + num(o) + " at " + where(i) + ", the subject " + num(y));
      continue;
    }
    if (!std::isfinite(y)) {
      note(++j.non_finite, num(y) + " at " + where(i) + " where the oracle is " + num(o));
      continue;
    }
    const double dy = y - o;
    ey[s] += dy * dy;
    eo[s] += o * o;
    const double f = std::max(u * std::fabs(o), half_quantum);
    ef[s] += f * f;
    sum_y2 += dy * dy;
    sum_o2 += o * o;
    dot_yo += y * o;
    norm_y2 += y * y;
    if (std::fabs(dy) > j.max_abs_err || j.worst_coordinate.empty()) {
      j.max_abs_err = std::fabs(dy);
      j.worst_coordinate = coordinate_of(O.shape, i);
    }
    j.max_ulps = std::max(j.max_ulps, std::fabs(dy) / ulp_of(out.dtype, o));
  }
  double sum_z2 = 0, sum_f2 = 0;
  for (std::size_t s = 0; s < n_slices; ++s) sum_z2 += ez[s] * ez[s], sum_f2 += ef[s];
  for (std::size_t s = 0; s < n_slices; ++s) ey[s] = std::sqrt(ey[s]), eo[s] = std::sqrt(eo[s]), ef[s] = std::sqrt(ef[s]);

  j.slice_error = ey;
  j.slice_floor = ef;
  // Slices without a time axis are judged each on its own: a window of one.
  const auto W = out.time_axis < 0 ? std::size_t{1} : static_cast<std::size_t>(std::max<std::int64_t>(1, cfg.window));
  const double k = out.gradient ? cfg.k_gradient : cfg.k;
  j.oracle_margin = std::numeric_limits<double>::infinity();
  j.slice_tolerance.resize(n_slices);
  double worst_timestep_ratio = 0;
  for (std::size_t t = 0; t < n_slices; ++t) {
    // The window of t: the W slices ending at t, or for gradients the W starting at t — near the end
    // of the sequence the last W, so that the baseline's level there rests on as many slices as
    // elsewhere (a window of the last one or two slices lets one lucky float rounding set the tolerance).
    const std::size_t last_full = n_slices > W ? n_slices - W : 0;
    const std::size_t w0 = out.gradient ? std::min(t, last_full) : (t + 1 >= W ? t + 1 - W : 0);
    const std::size_t w1 = out.gradient ? std::min(n_slices - 1, w0 + W - 1) : t;
    double wy = 0, wz = 0, wf = 0, window_baseline_max = 0;
    for (std::size_t s = w0; s <= w1; ++s) {
      wy += ey[s] * ey[s], wz += ez[s] * ez[s], wf += ef[s] * ef[s];
      window_baseline_max = std::max(window_baseline_max, ez[s]);
    }
    // (3) per timestep
    const double tol_t = k * window_baseline_max + ef[t];
    j.slice_tolerance[t] = tol_t;
    const double ratio_t = ey[t] == 0 ? 0 : ey[t] / tol_t;
    if (ratio_t > worst_timestep_ratio || j.worst_timestep < 0) {
      worst_timestep_ratio = ratio_t;
      j.worst_timestep = static_cast<std::int64_t>(t);
    }
    j.worst_ratio = std::max(j.worst_ratio, ratio_t);
    if (ey[t] > tol_t)
      note(++j.timestep_violations, (out.time_axis >= 0 ? "timestep " + std::to_string(t)
                                   : n_slices > 1 ? "slice " + std::to_string(t) : std::string("whole tensor")) +
                                        ": error " + num(ey[t]) + " > tolerance " + num(tol_t) + " (" + num(k) +
                                        " × baseline " + num(window_baseline_max) + " + floor " +
                                        num(ef[t]) + "), relative " + num(eo[t] > 0 ? ey[t] / eo[t] : ey[t]));
    // (4) the window (only full windows, and the whole tensor when shorter)
    if (out.gradient ? (t + W <= n_slices || t == 0) : (t + 1 >= W || t + 1 == n_slices)) {
      const double tol_w = k * std::sqrt(wz) + std::sqrt(wf);
      const double ratio_w = wy == 0 ? 0 : std::sqrt(wy) / tol_w;
      j.worst_ratio = std::max(j.worst_ratio, ratio_w);
      if (std::sqrt(wy) > tol_w)
        note(++j.window_violations, "window of timesteps " + std::to_string(w0) + ".." + std::to_string(w1) +
                                        ": RMS error " + num(std::sqrt(wy / double(w1 - w0 + 1))) + " > tolerance " +
                                        num(tol_w / std::sqrt(double(w1 - w0 + 1))) + " (RMS)" +
                                        largest_slice(ey, ez, w0, w1, wz));
    }
    if (eo[t] > 0) {
      j.max_rel_err = std::max(j.max_rel_err, ey[t] / eo[t]);
      j.baseline_rel_err = std::max(j.baseline_rel_err, ez[t] / eo[t]);
    }
    if (!out.oracle_error.empty() && out.oracle_error[t] > 0)
      j.oracle_margin = std::min(j.oracle_margin, tol_t / out.oracle_error[t]);
  }
  j.oracle_certified = !out.oracle_error.empty() && j.oracle_margin >= cfg.oracle_margin;
  if (out.oracle_error.empty())
    j.violations.push_back(out.name + ": no error estimate for the oracle, so it cannot certify itself");
  else if (!j.oracle_certified)
    j.violations.push_back(out.name + ": the oracle's error estimate is only " + num(j.oracle_margin) +
                           "× below the tolerance (needs " + num(cfg.oracle_margin) + "×)");

  j.oracle_norm = std::sqrt(sum_o2);
  if (sum_o2 > 0) {
    j.rel_rms = std::sqrt(sum_y2 / sum_o2);
    j.baseline_rel_rms = std::sqrt(sum_z2 / sum_o2);
  }
  j.cosine = norm_y2 > 0 && sum_o2 > 0 ? dot_yo / std::sqrt(norm_y2 * sum_o2) : (norm_y2 == sum_o2 ? 1.0 : 0.0);
  const double whole_tol = k * std::sqrt(sum_z2) + std::sqrt(sum_f2);
  j.whole_tensor_ratio = sum_y2 == 0 ? 0 : std::sqrt(sum_y2) / whole_tol;
  j.pass = j.unwritten == 0 && j.non_finite == 0 && j.baseline_non_finite == 0 && j.timestep_violations == 0 &&
           j.window_violations == 0 && j.oracle_certified;
  return j;
}

std::string coordinate_string(const std::vector<std::int64_t>& c) {
  std::string s = "(";
  for (std::size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "") + std::to_string(c[i]);
  return s + ")";
}

}  // namespace larc::harness
