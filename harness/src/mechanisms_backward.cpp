// The gradient twins (docs/gate.md "Gradient cases") of GDN, DeltaNet, KLA and GLA: the forward's
// inputs plus the cotangents do and dht; outputs the gradients FLA's autograd returns for them, in
// the case's dtype (dh0 in float32), computed by the reference's backward verb.
#include "larc/reference/delta_rule_backward.h"
#include "larc/reference/gla_backward.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace dr = ref::delta_rule;

const Mechanism& forward_of(const std::vector<Mechanism>& out, std::string_view name) {
  for (const Mechanism& m : out)
    if (m.name == name) return m;
  throw std::logic_error("gradient twin: forward mechanism '" + std::string(name) + "' is not registered yet");
}

TensorSpec gradient(std::string name, std::string dims, std::string meaning) {
  return {.name = std::move(name), .dims = std::move(dims), .meaning = std::move(meaning)};
}
TensorSpec initial_state_gradient() {
  return {.name = "dh0", .dims = "BHKV", .meaning = "∂L/∂initial_state (float32)", .always_fp32 = true};
}

// The delta rules' gradients: dq, dk, dv, the decay's (when it has one), the step's, dh0.
std::vector<TensorSpec> delta_rule_gradients(bool decay, const std::string& step) {
  std::vector<TensorSpec> g = {gradient("dq", "BTHK", "∂L/∂q"), gradient("dk", "BTHK", "∂L/∂k"),
                               gradient("dv", "BTHV", "∂L/∂v")};
  if (decay) g.push_back(gradient("dg", "BTH", "∂L/∂g (log-decays)"));
  g.push_back(gradient("d" + step, "BTH", "∂L/∂" + step));
  g.push_back(initial_state_gradient());
  return g;
}

template <class S>
dr::BatchedCotangents<S> cotangents_in(const ValueMap& in) {
  return {output_cotangent_in<S>(in), state_cotangent_in<S>(in)};
}

template <class S>
ValueMap delta_rule_values(const dr::BatchedGradients<S>& g, const std::string& step) {
  ValueMap out{{"dq", to_double_tensor(g.dq)}, {"dk", to_double_tensor(g.dk)}, {"dv", to_double_tensor(g.dv)},
               {"d" + step, to_double_tensor(g.dbeta)}, {"dh0", to_double_tensor(g.d_initial_state)}};
  if (!g.dg.data.empty()) out.emplace("dg", to_double_tensor(g.dg));
  return out;
}
}  // namespace

void register_backward_mechanisms(std::vector<Mechanism>& out) {
  const double kla_eps = forward_of(out, "kla").parameters.at("eps").get<double>();
  std::vector<Mechanism> twins;
  twins.push_back(gradient_twin(forward_of(out, "gdn"), delta_rule_gradients(true, "beta"), []<class S>(const ValueMap& in) {
    return delta_rule_values(dr::gdn_backward_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")),
                                                         cast_tensor<S>(in.at("v")), cast_tensor<S>(in.at("g")),
                                                         cast_tensor<S>(in.at("beta")), cotangents_in<S>(in), {},
                                                         initial_state_in<S>(in)),
                             "beta");
  }));
  twins.push_back(gradient_twin(forward_of(out, "deltanet"), delta_rule_gradients(false, "beta"), []<class S>(const ValueMap& in) {
    return delta_rule_values(dr::deltanet_backward_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")),
                                                              cast_tensor<S>(in.at("v")), cast_tensor<S>(in.at("beta")),
                                                              cotangents_in<S>(in), {}, initial_state_in<S>(in)),
                             "beta");
  }));
  twins.push_back(gradient_twin(forward_of(out, "kla"), delta_rule_gradients(true, "eta"), [kla_eps]<class S>(const ValueMap& in) {
    return delta_rule_values(dr::kla_backward_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")),
                                                         cast_tensor<S>(in.at("v")), cast_tensor<S>(in.at("g")),
                                                         cast_tensor<S>(in.at("eta")), ref::from_double<S>(kla_eps),
                                                         cotangents_in<S>(in), {}, initial_state_in<S>(in)),
                             "eta");
  }));
  twins.push_back(gradient_twin(
      forward_of(out, "gla"),
      {gradient("dq", "BTHK", "∂L/∂q"), gradient("dk", "BTHK", "∂L/∂k"), gradient("dv", "BTHV", "∂L/∂v"),
       gradient("dgk", "BTHK", "∂L/∂gk (per-channel log-decays)"), initial_state_gradient()},
      []<class S>(const ValueMap& in) {
        const auto g = ref::gla::gla_backward_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")),
                                                         cast_tensor<S>(in.at("v")), cast_tensor<S>(in.at("gk")),
                                                         output_cotangent_in<S>(in), state_cotangent_in<S>(in), {},
                                                         initial_state_in<S>(in));
        return ValueMap{{"dq", to_double_tensor(g.dq)}, {"dk", to_double_tensor(g.dk)}, {"dv", to_double_tensor(g.dv)},
                        {"dgk", to_double_tensor(g.dgk)}, {"dh0", to_double_tensor(g.d_initial_state)}};
      }));
  for (Mechanism& m : twins) out.push_back(std::move(m));
}

}  // namespace larc::harness::detail
