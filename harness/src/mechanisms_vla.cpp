// Variational linear attention (reference/vla.h, SPEC §1) as a gate mechanism with the paper's
// defaults: φ = ELU + 1, ratio read, λ0 = 1, stab_eps = 1e-4, no nudge, penalty directions
// u_t = norm(k_t)/√K (the authors'); q, k [B,T,H,K], v [B,T,H,V], an optional initial memory Sᵀ
// [B,H,K,V] in float32 (the initial_state knob; A_0 = I/λ0 and ζ_0 = 0 as without one); outputs o
// [B,T,H,V] and the final memory Sᵀ [B,H,K,V] in float32. Forms: serial, streamed and chunked
// (vla_chunked.h; the scan is checked by the claims). Its gradient twin "vla-backward" through
// vla_backward.h.
#include "larc/common/mechanism_constants.h"
#include "larc/reference/vla_backward.h"
#include "larc/reference/vla_chunked.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

// The oracle reads VLA's floor from the reference's default; the kernels from mechanism_constants.
static_assert(ref::vla::Options<double>{}.stab_eps == mechanism_constants::vla_stab_eps,
              "reference/vla.h's stab_eps and larc/common/mechanism_constants.h's must agree");

namespace {
// The gradient twin's gradients: dq, dk (with the path through the penalty directions u = norm(k)/√K),
// dv and dh0 (of Sᵀ_0) of L = Σ⟨do, o⟩ + ⟨dht, final_state⟩, per head through vla::backward.
template <class S>
ValueMap vla_gradients(const ValueMap& in) {
  const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
  const auto h0 = initial_state_in<S>(in);
  const ref::BatchedCotangents<S> cot = cotangents_in<S>(in);
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3), V = v.dim(3);
  const ref::Mat<S> identity = ref::Mat<S>::Identity(K, K);  // W_u of the authors' penalty directions
  ref::Tensor<S> dq({B, T, H, K}), dk({B, T, H, K}), dv({B, T, H, V}), dh0({B, H, K, V});
  ref::for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const ref::vla::Problem<S> p = ref::vla::head_problem<S>(q, k, v, {}, {}, h0, b, h);
    const ref::vla::Gradients<S> g = ref::vla::backward(p, {cot.head_d_o(b, h), cot.head_d_final_state(b, h), {}, {}});
    ref::set_head_rows(dq, b, h, g.dq);
    ref::set_head_rows(dk, b, h, ref::Mat<S>(g.dk + ref::vla::authors_penalty_directions_backward<S>(p.k, identity, g.du).dk));
    ref::set_head_rows(dv, b, h, g.dv);
    ref::set_head_state(dh0, b, h, g.d_initial.s);
  });
  return {{"dq", to_double_tensor(dq)}, {"dk", to_double_tensor(dk)}, {"dv", to_double_tensor(dv)}, {"dh0", to_double_tensor(dh0)}};
}
}  // namespace

void register_vla_mechanisms(std::vector<Mechanism>& out) {
  Mechanism m;
  m.name = "vla";
  m.description = "variational linear attention: Sherman–Morrison penalty A_t, S_t = S(I − k̂ α̂ᵀ) + v α̂ᵀ, ratio read";
  m.inputs = {{"q", "BTHK", "queries"}, {"k", "BTHK", "raw keys"}, {"v", "BTHV", "values"}, initial_state_spec()};
  m.outputs = {{"o", "BTHV", "outputs", false}, {"final_state", "BHKV", "memory Sᵀ after the last token", true}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖"}, initial_state_knob(), entries_knob(), key_set_knob()};
  m.edge_regimes = edge_regimes(false);
  m.parameters = {{"lambda0", 1}, {"stab_eps", mechanism_constants::vla_stab_eps}, {"feature_map", "elu+1"}, {"read", "ratio"},
                  {"penalty_directions", "norm(k)/sqrt(K)"},
                  {"initial_state", "the initial_state knob: none, zero or random (A_0 = I/lambda0, zeta_0 = 0)"}};
  m.forms = ref::forms_of<ref::vla::Family>();
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in;
    add_qkv(in, rng, s, kn, kn.at("key_norm"));
    add_initial_state(in, s, seed, kn);
    return in;
  };
  // The outputs in scalar S, in `form`, with the chunked form's operands rounded to `operands`
  // (compute and compute_io differ only in these).
  auto outputs = []<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
    const auto r = ref::vla::vla_batched_in<S>(q, k, v, form, chunk, {}, {}, initial_state_in<S>(in), operands);
    return ValueMap{{"o", to_double_tensor(r.o)}, {"final_state", to_double_tensor(r.final_state)}};
  };
  set_compute(m, outputs);
  out.push_back(std::move(m));
  // The gradient twin (docs/gate.md "Gradient cases"), through the reference's backward verb.
  out.push_back(gradient_twin(
      out.back(),
      {gradient_spec("dq", "BTHK", "∂L/∂q"), gradient_spec("dk", "BTHK", "∂L/∂k (through φ(k) and u = norm(k)/√K)"),
       gradient_spec("dv", "BTHV", "∂L/∂v"), initial_state_gradient_spec()},
      []<class S>(const ValueMap& in) { return vla_gradients<S>(in); }));
}

}  // namespace larc::harness::detail
