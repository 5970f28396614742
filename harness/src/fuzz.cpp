#include "larc/harness/fuzz.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "larc/cases/shrink.h"
#include "mechanism_support.h"
#include "reference_subjects.h"

namespace larc::harness {

namespace {
using Clock = std::chrono::steady_clock;

bool contains(const std::vector<std::string>& names, const std::string& x) {
  return std::find(names.begin(), names.end(), x) != names.end();
}

std::int64_t bound(std::int64_t campaign_max, std::int64_t subject_max) {
  return subject_max > 0 ? std::min(campaign_max, subject_max) : campaign_max;
}

bool is_power_of_two(std::int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// A head dimension in [min, max]: from the subject's own list when it has one, else half the time a
// power of two and half the time not (DESIGN.md "Randomized inputs": d not a power of two).
std::int64_t draw_head_dim(detail::Rng& rng, std::int64_t min, std::int64_t max,
                           const std::vector<std::int64_t>& head_dims) {
  if (!head_dims.empty()) {
    std::vector<std::int64_t> fit;
    for (std::int64_t d : head_dims)
      if (d <= max) fit.push_back(d);
    if (fit.empty()) fit = {*std::min_element(head_dims.begin(), head_dims.end())};
    return fit[rng.bits() % fit.size()];
  }
  static const std::int64_t kDims[] = {1, 2, 3, 5, 8, 12, 16, 24, 31, 32, 48, 64, 96, 100, 128, 192, 256};
  const bool power = rng.bits() % 2 == 0;
  std::vector<std::int64_t> fit;
  for (std::int64_t d : kDims)
    if (min <= d && d <= max && is_power_of_two(d) == power) fit.push_back(d);
  if (fit.empty()) return std::max<std::int64_t>(min, 1);
  return fit[rng.bits() % fit.size()];
}

// T: a quarter each T = 1, a multiple of the chunk, not a multiple of the chunk, log-uniform.
std::int64_t draw_length(detail::Rng& rng, std::int64_t max_T) {
  const std::int64_t chunk = detail::kReferenceChunk;
  const std::int64_t chunks = max_T / chunk;
  switch (rng.bits() % 4) {
    case 0: return 1;
    case 1: return chunks == 0 ? max_T : chunk * (1 + static_cast<std::int64_t>(rng.bits() % chunks));
    case 2: {
      std::int64_t T = chunk * static_cast<std::int64_t>(rng.bits() % (chunks + 1)) + 1 +
                       static_cast<std::int64_t>(rng.bits() % (chunk - 1));
      T = std::min(T, max_T);
      return T > 1 && T % chunk == 0 ? T - 1 : T;
    }
    default: return std::clamp<std::int64_t>(std::llround(rng.log_uniform(1, static_cast<double>(max_T))), 1, max_T);
  }
}

double draw_knob(detail::Rng& rng, const Knob& k) {
  if (k.regime && rng.bits() % 2 == 0) return k.default_value;  // edge regimes: the plain case half of the time
  if (k.integer) return k.lo + static_cast<double>(rng.bits() % static_cast<std::uint64_t>(k.hi - k.lo + 1));
  const double v = k.log_scale && k.lo > 0 ? rng.log_uniform(k.lo, k.hi) : rng.uniform(k.lo, k.hi);
  return std::clamp(v, k.lo, k.hi);
}

CaseResult judge_with(const CaseJudge& run, const CaseSpec& spec) { return run ? run(spec) : run_case(spec); }
}  // namespace

// --- Campaign -----------------------------------------------------------------------------------

Campaign::Campaign(CampaignConfig config) : config_(std::move(config)) {
  for (const std::string& m : config_.mechanisms) find_mechanism(m);  // throws naming the known ones
  for (const std::string& name : config_.subjects) {
    bool known = false;
    for (const Subject& s : subjects()) known = known || s.name == name;
    if (!known) {
      std::string names;
      for (const Subject& s : subjects())
        if (names.find(s.name) == std::string::npos) names += (names.empty() ? "" : ", ") + s.name;
      throw std::invalid_argument("subject: unknown '" + name + "' (known: " + names + ")");
    }
  }
  if (config_.max_B < 1 || config_.max_T < 1 || config_.max_H < 1 || config_.max_K < 1 || config_.max_V < 1)
    throw std::invalid_argument("campaign: the largest B, T, H, K, V must be at least 1");
  for (const Subject& s : subjects()) {
    if (!config_.subjects.empty() && !contains(config_.subjects, s.name)) continue;
    if (s.limits.min_K > config_.max_K) continue;  // no case of it fits the campaign's largest K
    if (!config_.mechanisms.empty() && !contains(config_.mechanisms, s.mechanism)) continue;
    for (Dtype d : s.dtypes)
      if (config_.dtypes.empty() || std::find(config_.dtypes.begin(), config_.dtypes.end(), d) != config_.dtypes.end())
        cells_.push_back({&s, d});
  }
  if (cells_.empty())
    throw std::invalid_argument("campaign: no registered subject matches --subject, --mechanism and --dtype together");
  for (const auto& [name, value] : config_.knobs) {
    bool any = false;
    for (const CampaignCell& c : cells_) {
      const Mechanism& m = find_mechanism(c.subject->mechanism);
      for (const Knob& k : m.knobs)
        if (k.name == name) {
          any = true;
          m.resolve_knobs({{name, value}});  // a value outside the knob's range: refused naming it
        }
    }
    if (!any) throw std::invalid_argument("--knob: no selected mechanism has a knob named '" + name + "'");
  }
  for (const CampaignCell& c : cells_) {  // the largest case a cell may draw must fit (kMaxTensorElements)
    const ShapeLimits& lim = c.subject->limits;
    const Mechanism& m = find_mechanism(c.subject->mechanism);
    Shape largest{bound(config_.max_B, lim.max_B), bound(config_.max_T, lim.max_T), bound(config_.max_H, lim.max_H),
                  bound(config_.max_K, lim.max_K), bound(config_.max_V, lim.max_V)};
    if (lim.value_head_groups && m.groups_value_heads()) largest.HV = 4 * largest.H;
    m.check_shape(largest);
  }
}

std::int64_t Campaign::max_T_of(const CaseSpec& spec) const {
  return bound(config_.max_T, find_subject(spec.subject, spec.mechanism).limits.max_T);
}

CaseSpec Campaign::case_at(std::uint64_t index) const {
  detail::Rng rng(detail::mix_seed(config_.seed, index));
  const CampaignCell& cell = cells_[rng.bits() % cells_.size()];
  const ShapeLimits& lim = cell.subject->limits;
  CaseSpec spec;
  spec.subject = cell.subject->name;
  spec.mechanism = cell.subject->mechanism;
  spec.dtype = cell.dtype;
  spec.origin = "random";
  spec.shape.B = 1 + static_cast<std::int64_t>(rng.bits() % bound(config_.max_B, lim.max_B));
  spec.shape.T = draw_length(rng, bound(config_.max_T, lim.max_T));
  spec.shape.H = 1 + static_cast<std::int64_t>(rng.bits() % bound(config_.max_H, lim.max_H));
  spec.shape.K = draw_head_dim(rng, lim.min_K, bound(config_.max_K, lim.max_K), lim.head_dims);
  spec.shape.V = draw_head_dim(rng, 1, bound(config_.max_V, lim.max_V), lim.head_dims);
  spec.seed = rng.bits();
  for (const Knob& k : find_mechanism(spec.mechanism).knobs) {
    spec.knobs[k.name] = draw_knob(rng, k);  // drawn even when held, so the other draws do not move
    if (const auto held = config_.knobs.find(k.name); held != config_.knobs.end()) spec.knobs[k.name] = held->second;
  }
  for (const std::string& name : cell.subject->knobs_held_at_default()) spec.knobs.erase(name);
  // Value heads grouped over the query/key heads (HV = G·H, G ∈ {2, 4}) half of the time, where the
  // mechanism and the subject take them; drawn last, so every other draw is the same without them.
  if (lim.value_head_groups && find_mechanism(spec.mechanism).groups_value_heads() && rng.bits() % 2 == 1)
    spec.shape.HV = spec.shape.H * (rng.bits() % 2 == 0 ? 2 : 4);
  spec.knobs = find_mechanism(spec.mechanism).resolve_knobs(spec.knobs);
  return spec;
}

// --- failures and shrinking ---------------------------------------------------------------------

std::set<std::string> failure_kinds(const CaseResult& r) {
  std::set<std::string> kinds;
  if (r.pass) return kinds;
  if (r.outputs.empty()) kinds.insert("exception");
  if (!r.deterministic) kinds.insert("nondeterministic");
  std::size_t explained = 0;  // errors that are the judgements' violations
  for (const Judgement& j : r.outputs) {
    explained += j.violations.size();
    if (j.unwritten) kinds.insert("unwritten");
    if (j.non_finite) kinds.insert("non_finite");
    if (j.baseline_non_finite) kinds.insert("out_of_range");
    if (j.timestep_violations || j.window_violations) kinds.insert("tolerance");
    if (!j.oracle_certified) kinds.insert("oracle");
  }
  // Any other error (e.g. written past the end); nondeterminism adds messages of its own.
  if (!r.outputs.empty() && r.deterministic && r.errors.size() > explained) kinds.insert("other");
  return kinds;
}

namespace {
// The reductions of `spec` in the order shrink_failure tries them.
std::vector<CaseSpec> reductions(const CaseSpec& spec, const ShapeLimits& limits) {
  std::vector<CaseSpec> out;
  for (std::int64_t Shape::*dim : {&Shape::T, &Shape::B, &Shape::H, &Shape::K, &Shape::V}) {
    const std::int64_t x = spec.shape.*dim;
    std::vector<std::int64_t> tried;
    for (std::int64_t y : {std::int64_t{1}, x / 2, x - 1}) {
      if (y < 1 || y >= x || std::find(tried.begin(), tried.end(), y) != tried.end()) continue;
      tried.push_back(y);
      CaseSpec c = spec;
      c.shape.*dim = y;
      if (dim == &Shape::H && spec.shape.HV != 0) c.shape.HV = y * (spec.shape.HV / spec.shape.H);  // keep the groups
      if (limits_accept(limits, c.shape)) out.push_back(c);
    }
  }
  if (spec.shape.value_heads() != spec.shape.H) {  // one value head per query/key head
    CaseSpec c = spec;
    c.shape.HV = 0;
    out.push_back(c);
  }
  for (const Knob& k : find_mechanism(spec.mechanism).knobs) {
    const double v = spec.knobs.at(k.name);
    if (v == k.default_value) continue;
    CaseSpec to_default = spec;
    to_default.knobs[k.name] = k.default_value;
    out.push_back(to_default);
    if (!k.integer && std::fabs(v - k.default_value) > 1e-3 * (k.hi - k.lo)) {
      CaseSpec halfway = spec;
      halfway.knobs[k.name] = (v + k.default_value) / 2;
      out.push_back(halfway);
    }
  }
  return out;
}

bool shares_kind(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& x : a)
    if (b.count(x)) return true;
  return false;
}
}  // namespace

ShrinkOutcome shrink_failure(const CaseResult& failing, const ShapeLimits& limits, int max_evaluations,
                             const CaseJudge& run) {
  ShrinkOutcome out;
  out.shrunk = failing;
  const std::set<std::string> kinds = failure_kinds(failing);
  if (failing.pass) return out;
  const cases::ShrinkCount n = cases::shrink_greedily(
      out.shrunk, [&](const CaseResult& r) { return cases::CandidateList<CaseSpec>(reductions(r.spec, limits)); },
      [&](const CaseSpec& candidate) {
        CaseResult r = judge_with(run, candidate);
        if (r.pass || !shares_kind(kinds, failure_kinds(r))) return std::optional<CaseResult>();
        out.path.push_back(candidate);  // shrink_greedily moves to every candidate returned
        return std::optional<CaseResult>(std::move(r));
      },
      max_evaluations);
  out.steps = n.steps;
  out.evaluations = n.tries;
  return out;
}

ShrinkOutcome shrink_failure(const CaseResult& failing, int max_evaluations, const CaseJudge& run) {
  if (failing.pass) return shrink_failure(failing, ShapeLimits{}, max_evaluations, run);  // returns it unchanged
  return shrink_failure(failing, find_subject(failing.spec.subject, failing.spec.mechanism).limits, max_evaluations, run);
}

// --- the campaign -------------------------------------------------------------------------------

std::size_t CampaignRun::failures() const {
  return static_cast<std::size_t>(std::count_if(cases.begin(), cases.end(), [](const FuzzCase& c) { return !c.result.pass; }));
}

CampaignRun run_campaign(const Campaign& campaign, Shard shard, const RunLimits& limits, const FailureSaver& save,
                         const CaseObserver& observe, const CaseJudge& run) {
  if (shard.count == 0 || shard.index >= shard.count)
    throw std::invalid_argument("shard: expected an index below the count, got " + std::to_string(shard.index) + "/" +
                                std::to_string(shard.count));
  if (!limits.cases && !limits.deadline) throw std::invalid_argument("run_campaign: give a case count or a deadline");
  struct Stopped {};
  const CaseJudge judge = [&](const CaseSpec& spec) {
    if (limits.stop && limits.stop()) throw Stopped{};
    return judge_with(run, spec);
  };
  const auto start = Clock::now();
  CampaignRun out;
  for (std::uint64_t i = shard.index;; i += shard.count) {
    if (limits.cases && i >= *limits.cases) break;
    if (limits.deadline && Clock::now() >= *limits.deadline) break;
    if (limits.skip.count(i)) continue;
    FuzzCase c;
    c.index = i;
    try {
      c.result = judge(campaign.case_at(i));
      if (!c.result.pass) c.shrink = shrink_failure(c.result, 200, judge);
    } catch (const Stopped&) {
      out.interrupted = true;
      break;
    }
    if (c.shrink && save) c.fixture = save(c);
    out.cases.push_back(std::move(c));
    if (observe) observe(out.cases.size(), out.cases.back());
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

// --- the search for the worst error -------------------------------------------------------------

double error_score(const CaseResult& r) {
  const std::set<std::string> kinds = failure_kinds(r);
  for (const char* broken : {"exception", "nondeterministic", "other", "unwritten", "non_finite"})
    if (kinds.count(broken)) return std::numeric_limits<double>::infinity();
  if (kinds.count("out_of_range") || kinds.count("oracle")) return -std::numeric_limits<double>::infinity();
  double worst = 0;
  for (const Judgement& j : r.outputs) worst = std::max(worst, j.worst_ratio);
  return worst;
}

namespace {
// One coordinate of a climb: a knob or T, mapped to [0, 1] (logarithmically when log_scale).
struct Coordinate {
  std::string knob;  // empty: the length T
  double lo = 0, hi = 1;
  bool log_scale = false;

  double to_unit(double v) const {
    if (hi == lo) return 0;
    return log_scale ? std::log(v / lo) / std::log(hi / lo) : (v - lo) / (hi - lo);
  }
  double from_unit(double x) const {
    const double v = log_scale ? lo * std::exp(x * std::log(hi / lo)) : lo + x * (hi - lo);
    return std::clamp(knob.empty() ? std::round(v) : v, lo, hi);
  }
};

std::vector<Coordinate> coordinates_of(const Campaign& campaign, const CaseSpec& spec) {
  std::vector<Coordinate> cs;
  for (const Knob& k : find_mechanism(spec.mechanism).knobs)
    if (k.hi > k.lo && !k.integer && !campaign.config().knobs.count(k.name))
      cs.push_back({k.name, k.lo, k.hi, k.log_scale && k.lo > 0});
  const std::int64_t max_T = campaign.max_T_of(spec);
  if (max_T > 1) cs.push_back({"", 1, static_cast<double>(max_T), true});
  return cs;
}

CaseSpec spec_at(CaseSpec spec, const std::vector<Coordinate>& cs, const std::vector<double>& x) {
  for (std::size_t c = 0; c < cs.size(); ++c) {
    const double v = cs[c].from_unit(x[c]);
    if (cs[c].knob.empty()) spec.shape.T = static_cast<std::int64_t>(v);
    else spec.knobs[cs[c].knob] = v;
  }
  return spec;
}

bool same_case(const CaseSpec& a, const CaseSpec& b) { return a.shape == b.shape && a.knobs == b.knobs; }

// Judges cases and keeps the worst one, within the limits.
class Evaluator {
 public:
  Evaluator(const SearchLimits& limits, const CaseJudge& run, const CaseObserver& observe)
      : limits_(limits), run_(run), observe_(observe) {}
  bool exhausted() const {
    return out.evaluations >= limits_.evaluations || (limits_.deadline && Clock::now() >= *limits_.deadline) ||
           (limits_.stop && limits_.stop());
  }
  double operator()(const CaseSpec& spec) {
    std::string key = spec.reproduce();
    const auto recorded = limits_.recorded.find(key);
    double score = 0;
    if (recorded != limits_.recorded.end()) {  // a step of the interrupted run, retraced
      score = recorded->second;
      ++out.replayed;
      if (out.evaluations++ == 0 || score > out.worst_score) {
        out.worst_score = score;
        unjudged_worst_ = spec;
      }
    } else {
      judge_unjudged_worst();
      FuzzCase c;
      c.index = static_cast<std::uint64_t>(out.evaluations);
      c.result = judge_with(run_, spec);
      score = error_score(c.result);
      if (out.evaluations++ == 0 || score > out.worst_score) {
        out.worst = c.result;
        out.worst_score = score;
      }
      if (observe_) observe_(static_cast<std::size_t>(out.evaluations), c);
    }
    out.best_so_far.push_back(out.worst_score);
    out.scores.emplace_back(std::move(key), score);
    if (recorded == limits_.recorded.end() && limits_.after_each) limits_.after_each(out);
    return score;
  }
  // The worst case's result when the worst was a retraced step: judged once (the same result as in the
  // interrupted run; not counted as an evaluation).
  void judge_unjudged_worst() {
    if (!unjudged_worst_) return;
    out.worst = judge_with(run_, *unjudged_worst_);
    unjudged_worst_.reset();
  }
  ErrorSearch out;

 private:
  SearchLimits limits_;
  CaseJudge run_;
  CaseObserver observe_;
  std::optional<CaseSpec> unjudged_worst_;
};

void require_valid(Shard shard) {
  if (shard.count == 0 || shard.index >= shard.count)
    throw std::invalid_argument("shard: expected an index below the count, got " + std::to_string(shard.index) + "/" +
                                std::to_string(shard.count));
}
}  // namespace

ErrorSearch hill_climb_error(const Campaign& campaign, Shard shard, const SearchLimits& limits, const CaseJudge& run,
                             const CaseObserver& observe) {
  require_valid(shard);
  constexpr double kFirstStep = 0.25, kLastStep = 1.0 / 64;
  Evaluator evaluate(limits, run, observe);
  for (std::uint64_t r = 0; !evaluate.exhausted(); ++r) {
    const CaseSpec start = campaign.case_at(shard.index + r * shard.count);
    ++evaluate.out.restarts;
    const std::vector<Coordinate> cs = coordinates_of(campaign, start);
    std::vector<double> x(cs.size());
    for (std::size_t c = 0; c < cs.size(); ++c)
      x[c] = cs[c].to_unit(cs[c].knob.empty() ? static_cast<double>(start.shape.T) : start.knobs.at(cs[c].knob));
    double best = evaluate(start);
    // A climb ends when its step is below kLastStep or it found a broken case (+inf: nothing beats it).
    for (double step = kFirstStep; step >= kLastStep && !evaluate.exhausted() && !(std::isinf(best) && best > 0);) {
      bool improved = false;
      for (std::size_t c = 0; c < cs.size() && !improved; ++c) {
        for (double direction : {1.0, -1.0}) {
          // Step along the direction, doubling while it keeps raising the score.
          for (double s = step; !evaluate.exhausted(); s *= 2) {
            std::vector<double> y = x;
            y[c] = std::clamp(x[c] + direction * s, 0.0, 1.0);
            const CaseSpec here = spec_at(start, cs, x), there = spec_at(start, cs, y);
            if (same_case(here, there)) break;
            const double score = evaluate(there);
            if (!(score > best)) break;
            x = y;
            best = score;
            improved = true;
          }
          if (improved) break;
        }
      }
      if (!improved) step /= 2;
    }
  }
  evaluate.judge_unjudged_worst();
  return evaluate.out;
}

ErrorSearch blind_sample_error(const Campaign& campaign, Shard shard, const SearchLimits& limits, const CaseJudge& run) {
  require_valid(shard);
  Evaluator evaluate(limits, run, {});
  for (std::uint64_t k = 0; !evaluate.exhausted(); ++k) evaluate(campaign.case_at(shard.index + k * shard.count));
  evaluate.judge_unjudged_worst();
  return evaluate.out;
}

}  // namespace larc::harness
