// `larc fixtures gen`: writes one fixture (--mechanism --dtype --shape --seed --out) or the committed
// golden set (--golden DIR): per mechanism and variant a small case (T ≤ 256, d ≤ 64) in bf16 and
// fp32, plus cases shaped for flash-linear-attention's kernels (fla_*.safetensors) so that
// tools/ scripts can run FLA on them and `larc diff` can judge its outputs.
#include "fixtures_gen_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "larc/fixtures/safetensors.h"
#include "larc/harness/fixture.h"
#include "knob_option.h"
#include "option_checks.h"

namespace larc::cli {

namespace {
namespace h = larc::harness;
using h::Dtype;

struct GenCli {
  std::string mechanism, dtype = "bf16", shape = "1,64,2,16,16", out, golden;
  std::uint64_t seed = 1;
  std::vector<std::string> knobs;
};

struct GoldenCase {
  std::string file;
  h::CaseSpec spec;
};

h::CaseSpec spec_of(const std::string& mechanism, Dtype d, h::Shape s, std::uint64_t seed, h::KnobValues knobs = {}) {
  h::CaseSpec c;
  c.mechanism = mechanism;
  c.dtype = d;
  c.shape = s;
  c.seed = seed;
  c.knobs = std::move(knobs);
  c.origin = "golden";
  return c;
}

// The golden set (< 2 MB): every mechanism in bf16 and fp32 at [1, 100, 2, 8, 8] (T not a multiple of
// the chunk), near-collinear GDN keys, GDN, CCQ, HLA and log-linear attention (forward and gradients) with a random initial state, and cases shaped for flash-linear-attention's kernels: GDN for
// chunk_gated_delta_rule (K = V = 64) and log-linear for chunk_log_linear_attn (q, k [B,T,1,64], V = 64).
std::vector<GoldenCase> golden_set() {
  std::vector<GoldenCase> g;
  for (const h::Mechanism& m : h::mechanisms())
    for (Dtype d : {Dtype::bf16, Dtype::fp32})
      g.push_back({m.name + "_" + std::string(larc::ref::dtype_name(d)) + "_T100.safetensors",
                   spec_of(m.name, d, {1, 100, 2, 8, 8}, 1)});
  g.push_back({"gdn_collinear_fp32_T100.safetensors", spec_of("gdn", Dtype::fp32, {1, 100, 2, 8, 8}, 2, {{"collinearity", 0.99}})});
  for (Dtype d : {Dtype::bf16, Dtype::fp32})  // a random initial state: a kernel that ignores it fails
    g.push_back({"gdn_h0_" + std::string(larc::ref::dtype_name(d)) + "_T100.safetensors",
                 spec_of("gdn", d, {1, 100, 2, 8, 8}, 6, {{h::kInitialStateKnob, 2}})});
  // CCQ's state: the memory and the key statistics; HLA's: its summaries; log-linear attention's: the offset
  // t0 and its level states.
  for (const char* m : {"ccq-gdn", "ccq-gdn-backward", "hla", "hla-backward", "hla-normalized", "hla-normalized-backward", "ahla",
                        "ahla-backward", "log-linear", "log-linear-gdn-backward"})
    g.push_back({std::string(m) + "_h0_fp32_T100.safetensors", spec_of(m, Dtype::fp32, {1, 100, 2, 8, 8}, 6, {{h::kInitialStateKnob, 2}})});
  g.push_back({"fla_gdn_bf16_T256.safetensors", spec_of("gdn", Dtype::bf16, {1, 256, 2, 64, 64}, 3)});
  g.push_back({"fla_gdn_fp32_T128.safetensors", spec_of("gdn", Dtype::fp32, {1, 128, 1, 64, 64}, 4)});
  g.push_back({"fla_log_linear_bf16_T256.safetensors", spec_of("log-linear", Dtype::bf16, {1, 256, 2, 64, 64}, 5)});
  return g;
}

std::string gen_command(const h::CaseSpec& s) {
  std::string cmd = "larc fixtures gen --mechanism " + s.mechanism + " --dtype " + std::string(larc::ref::dtype_name(s.dtype)) +
                    " --shape " + s.shape.str() + " --seed " + std::to_string(s.seed);
  const h::KnobValues defaults = h::find_mechanism(s.mechanism).resolve_knobs({});
  for (const auto& [k, v] : s.knobs)
    if (defaults.at(k) != v) cmd += " --knob " + k + "=" + nlohmann::json(v).dump();
  return cmd;
}

void write_one(const std::filesystem::path& path, const h::CaseSpec& spec, const std::string& command) {
  h::PreparedCase p = h::prepare_case(spec);
  h::write_fixture(path, p, {{"generated_by", command}});
  std::cout << path.string() << ": " << spec.mechanism << " " << larc::ref::dtype_name(spec.dtype) << " [" << spec.shape.str()
            << "] seed " << spec.seed << ", " << std::filesystem::file_size(path) << " bytes\n";
}

int run_gen(const GenCli& c) {
  try {
    if (!c.golden.empty()) {
      std::filesystem::create_directories(c.golden);
      for (const GoldenCase& g : golden_set())
        write_one(std::filesystem::path(c.golden) / g.file, g.spec, gen_command(g.spec) + " --out " + g.file);
      return 0;
    }
    if (c.mechanism.empty() || c.out.empty())
      throw std::invalid_argument("fixtures gen: give --mechanism and --out (or --golden DIR)");
    h::CaseSpec spec = spec_of(c.mechanism, h::parse_dtype(c.dtype), h::Shape::parse(c.shape), c.seed, parse_knobs(c.knobs));
    spec.origin = "fixtures gen";
    spec.knobs = h::find_mechanism(spec.mechanism).resolve_knobs(spec.knobs);
    write_one(c.out, spec, gen_command(spec) + " --out " + c.out);
  } catch (const larc::fixtures::FixtureError& e) {
    std::cerr << "larc fixtures gen: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
}  // namespace

std::function<int()> add_fixtures_gen_command(CLI::App& fixtures) {
  auto c = std::make_shared<GenCli>();
  CLI::App* cmd = fixtures.add_subcommand("gen", "Write a fixture (inputs, float64 oracle outputs, error bound, metadata)");
  cmd->add_option("--mechanism", c->mechanism, "Mechanism (larc gate --list shows them)");
  cmd->add_option("--dtype", c->dtype, "Input dtype: bf16, fp16, fp32, fp64")->capture_default_str();
  cmd->add_option("--shape", c->shape, "B,T,H,K,V")->capture_default_str();
  cmd->add_option("--seed", c->seed, "Seed of the inputs")->check(whole_number())->capture_default_str();
  cmd->add_option("--knob", c->knobs, "Generator knob NAME=VALUE; repeatable");
  cmd->add_option("--out", c->out, "The fixture file to write");
  cmd->add_option("--golden", c->golden, "Write the golden set into this directory instead (fixtures/golden)");
  return [cmd, c]() -> int { return cmd->parsed() ? run_gen(*c) : -1; };
}

}  // namespace larc::cli
