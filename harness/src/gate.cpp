#include "larc/harness/gate.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "cores.h"
#include "larc/harness/cores.h"
#include "larc/harness/fixture.h"
#include "larc/harness/fuzz.h"

namespace larc::harness {

namespace {
bool selected(const std::vector<std::string>& filter, const std::string& name) {
  return filter.empty() || std::find(filter.begin(), filter.end(), name) != filter.end();
}

// The subjects of `mechanism` that the filters select and that take `dtype`, `shape` and the knobs'
// case (its initial state).
std::vector<const Subject*> subjects_for(const GateOptions& o, const std::string& mechanism, Dtype dtype, const Shape& shape,
                                         const KnobValues& knobs) {
  std::vector<const Subject*> out;
  for (const Subject& s : subjects())
    if (s.mechanism == mechanism && selected(o.subjects, s.name) && s.supports(dtype) && limits_accept(s.limits, shape) &&
        s.takes(knobs) &&
        (o.dtypes.empty() || std::find(o.dtypes.begin(), o.dtypes.end(), dtype) != o.dtypes.end()))
      out.push_back(&s);
  return out;
}

void check_names(const GateOptions& o) {
  for (const std::string& m : o.mechanisms) find_mechanism(m);
  for (const std::string& name : o.subjects) {
    bool known = false;
    std::string names;
    for (const Subject& s : subjects()) {
      known = known || s.name == name;
      if (names.find(s.name) == std::string::npos) names += (names.empty() ? "" : ", ") + s.name;
    }
    if (!known) throw std::invalid_argument("--subject: unknown '" + name + "' (known: " + names + ")");
  }
  for (const auto& [knob, value] : o.knobs) {
    bool any = false;
    for (const Mechanism& m : mechanisms())
      if (selected(o.mechanisms, m.name))
        for (const Knob& k : m.knobs) any = any || k.name == knob;
    if (!any) throw std::invalid_argument("--knob: no selected mechanism has a knob named '" + knob + "'");
  }
}
}  // namespace

std::vector<Shape> default_grid_shapes() {
  return {{1, 1, 1, 8, 8}, {1, 100, 2, 16, 8}, {2, 160, 2, 32, 32}, {1, 70, 2, 16, 16, 4}};
}

std::size_t GatePlan::cases() const {
  std::size_t n = 0;
  for (const GateGroup& g : groups) n += g.subjects.size();
  return n;
}

GatePlan plan_gate(const GateOptions& o) {
  check_names(o);
  GatePlan plan;
  if (o.grid) {
    const std::vector<Shape> shapes = o.shapes.empty() ? default_grid_shapes() : o.shapes;
    for (const Mechanism& m : mechanisms()) {
      if (!selected(o.mechanisms, m.name)) continue;
      KnobValues knobs;
      for (const Knob& k : m.knobs)
        if (o.knobs.count(k.name)) knobs[k.name] = o.knobs.at(k.name);
      // The grid's knob sets: the given ones and, on the default grid, the same with a random initial
      // state (a mechanism with one whose value was not given) and with each of the mechanism's edge
      // regimes under the given knobs (an explicit --shape runs exactly the cases it names: a
      // reproduce command).
      std::vector<KnobValues> knob_sets{m.resolve_knobs(knobs)};
      if (o.shapes.empty()) {
        for (const Knob& k : m.knobs)
          if (k.name == kInitialStateKnob && !knobs.count(k.name)) {
            KnobValues with_state = knobs;
            with_state[k.name] = static_cast<double>(InitialState::random);
            knob_sets.push_back(m.resolve_knobs(with_state));
          }
        for (KnobValues edge : m.edge_regimes) {
          for (const auto& [name, value] : knobs) edge[name] = value;
          const KnobValues resolved = m.resolve_knobs(edge);
          if (std::find(knob_sets.begin(), knob_sets.end(), resolved) == knob_sets.end()) knob_sets.push_back(resolved);
        }
      }
      for (Dtype d : {Dtype::bf16, Dtype::fp16, Dtype::fp32, Dtype::fp64}) {
        for (const Shape& shape : shapes) {
          if (shape.value_heads() != shape.H && !m.groups_value_heads()) continue;  // HV ≠ H: the grouping mechanisms'
          m.check_shape(shape);  // a size below 1 or past 32-bit offsets: refused before any work
          for (const KnobValues& ks : knob_sets) {
            GateGroup g;
            g.spec.mechanism = m.name;
            g.spec.dtype = d;
            g.spec.shape = shape;
            g.spec.seed = o.seed;
            g.spec.knobs = ks;
            g.subjects = subjects_for(o, m.name, d, shape, ks);
            if (!g.subjects.empty()) plan.groups.push_back(std::move(g));
          }
        }
      }
    }
  }
  if (o.random > 0) {
    CampaignConfig cfg;
    cfg.seed = o.seed;
    cfg.subjects = o.subjects;
    cfg.mechanisms = o.mechanisms;
    cfg.dtypes = o.dtypes;
    const Campaign campaign(cfg);
    for (std::uint64_t i = 0; i < o.random; ++i) {
      GateGroup g;
      g.spec = campaign.case_at(i);
      g.subjects = {&find_subject(g.spec.subject, g.spec.mechanism)};
      g.spec.subject.clear();
      plan.groups.push_back(std::move(g));
    }
  }
  for (const auto& path : fixture_files(o.fixtures)) {
    auto prepared = std::make_shared<const PreparedCase>(read_fixture(path));
    if (!selected(o.mechanisms, prepared->spec.mechanism)) continue;
    GateGroup g;
    g.spec = prepared->spec;
    g.fixture = prepared;
    g.subjects = subjects_for(o, g.spec.mechanism, g.spec.dtype, g.spec.shape, g.spec.knobs);
    if (!g.subjects.empty()) plan.groups.push_back(std::move(g));
  }
  if (plan.groups.empty()) {
    std::string why;  // a subject named by --subject whose limits refuse every --shape
    for (const std::string& name : o.subjects)
      for (const Subject& s : subjects())
        if (s.name == name && !o.shapes.empty() &&
            std::none_of(o.shapes.begin(), o.shapes.end(), [&](const Shape& x) { return limits_accept(s.limits, x); }))
          why += "; " + s.name + " takes " + describe_limits(s.limits) + ", which no --shape meets";
    throw std::invalid_argument(
        "nothing to run: no registered subject matches the selection (--subject, --mechanism, --dtype, --shape)" + why);
  }
  return plan;
}

std::vector<CaseResult> run_gate(const GatePlan& plan, const Shard& shard, const ToleranceConfig& config,
                                 const std::function<void(std::size_t, std::size_t)>& progress, unsigned jobs) {
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < plan.groups.size(); ++i)
    if (shard.holds(i)) mine.push_back(i);
  // Groups are independent (inputs, oracle, subjects): workers take them in plan order and the
  // results are joined in plan order, so the report does not depend on the number of jobs.
  std::vector<std::vector<CaseResult>> per_group(mine.size());
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  std::size_t done = 0, failed = 0;
  std::exception_ptr error;
  auto work = [&] {
    for (std::size_t j; (j = next++) < mine.size();) {
      try {
        const GateGroup& g = plan.groups[mine[j]];
        const PreparedCase prepared = g.fixture ? *g.fixture : prepare_case(g.spec);
        for (const Subject* s : g.subjects) {
          per_group[j].push_back(run_subject(prepared, *s, config));
          const std::lock_guard<std::mutex> lock(progress_mutex);
          ++done;
          failed += per_group[j].back().pass ? 0 : 1;
          if (progress) progress(done, failed);
        }
      } catch (...) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        if (!error) error = std::current_exception();
        next = mine.size();
      }
    }
  };
  // `jobs` cores (cores.h): one per worker; the ones no worker needs (fewer groups than jobs, or a
  // worker done) run the (sequence, head) pairs of the reference computations in parallel.
  const ScopedCoreBudget budget(jobs);
  std::vector<std::thread> workers;
  for (std::size_t w = 1; w < std::min<std::size_t>(std::max(1u, jobs), mine.size()); ++w)
    workers.emplace_back([&work, core = detail::CoreClaim(1)] { work(); });
  work();
  {
    const detail::CoreLent waiting;
    for (std::thread& t : workers) t.join();
  }
  if (error) std::rethrow_exception(error);
  std::vector<CaseResult> results;
  for (auto& group : per_group)
    for (CaseResult& r : group) results.push_back(std::move(r));
  return results;
}

}  // namespace larc::harness
