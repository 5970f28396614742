// Gates my_gdn_forward with larc: register it as a subject of mechanism "gdn", plan the gate for it
// alone (a grid of shapes in fp32 and bf16 plus randomized cases) and run it; exit 0 when every case
// passes larc's tolerance policy, 1 otherwise. `--planted-defect` runs a broken variant, which must fail.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "larc/harness/gate.h"
#include "my_gdn_kernel.h"

namespace lh = larc::harness;

namespace {
std::vector<float> as_float(const lh::TypedTensor& t) {  // bf16/fp32 inputs widened exactly
  std::vector<float> out(t.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(t.get(i));
  return out;
}

// The launcher larc calls: inputs in the case's dtype, outputs allocated and poisoned with NaN.
lh::Launcher launcher(float carry) {
  return [carry](const lh::TensorMap& in, lh::TensorMap& out) {
    const auto& shape = in.at("q").shape();  // [B, T, H, K]
    const std::vector<float> q = as_float(in.at("q")), k = as_float(in.at("k")), v = as_float(in.at("v")),
                             g = as_float(in.at("g")), beta = as_float(in.at("beta"));
    // A case may give an initial state (the initial_state knob); none means zero.
    const auto h0 = in.find("initial_state");
    const std::vector<float> initial = h0 == in.end() ? std::vector<float>{} : as_float(h0->second);
    lh::TypedTensor& o = out.at("o");
    lh::TypedTensor& state = out.at("final_state");
    std::vector<float> o32(o.size()), state32(state.size());
    const int B = static_cast<int>(shape[0]), T = static_cast<int>(shape[1]), H = static_cast<int>(shape[2]),
              K = static_cast<int>(shape[3]), V = static_cast<int>(in.at("v").shape()[3]);
    my_gdn_forward({q.data(), k.data(), v.data(), g.data(), beta.data(), initial.empty() ? nullptr : initial.data(),
                    o32.data(), state32.data(), B, T, H, K, V,
                    1.0f / std::sqrt(static_cast<float>(K)), carry});
    for (std::size_t i = 0; i < o32.size(); ++i) o.set(i, o32[i]);  // rounded to the case's dtype
    for (std::size_t i = 0; i < state32.size(); ++i) state.set(i, state32[i]);
  };
}
}  // namespace

int main(int argc, char** argv) {
  const bool planted = argc > 1 && std::string(argv[1]) == "--planted-defect";
  lh::register_subject({.name = "my-gdn-cpu",
                        .mechanism = "gdn",
                        .dtypes = {lh::Dtype::fp32, lh::Dtype::bf16},
                        .limits = {},
                        .launch = launcher(planted ? 0.99f : 1.0f),
                        .description = "examples/out_of_tree_kernel: FLA-order GDN in float"});
  lh::GateOptions options;
  options.subjects = {"my-gdn-cpu"};
  options.mechanisms = {"gdn"};
  options.shapes = {lh::Shape{1, 1, 1, 8, 8}, lh::Shape{1, 100, 1, 16, 12}, lh::Shape{2, 64, 2, 8, 8}};
  options.random = 2;
  const std::vector<lh::CaseResult> results = lh::run_gate(lh::plan_gate(options), lh::Shard{});
  std::cout << lh::gate_table(results);
  std::size_t failed = 0;
  for (const lh::CaseResult& r : results) failed += r.pass ? 0 : 1;
  std::cout << results.size() - failed << "/" << results.size() << " cases pass\n";
  return failed == 0 ? 0 : 1;
}
