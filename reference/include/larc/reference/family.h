// One interface for every mechanism family (DESIGN.md "Layering"). A family is a type that names its
// per-head problem and result, the forms it computes, and the verb run(problem, form, chunk, operands)
// that computes them on one head's sequence. MechanismFamily checks that interface at compile time; the
// harness takes a mechanism's forms from its family, so every form a family has is one of the gate's
// baselines, and every batched call of every family goes through one driver, for_each_head.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "larc/reference/matmul_operands.h"
#include "larc/reference/tensor.h"

namespace larc::ref {

// F's verb in scalar S: run(problem, form, chunk, operands) → result (chunk and operands are read by
// Form::chunked only).
template <class F, class S>
concept FamilyInScalar = requires(const typename F::template Problem<S>& p, Form form, Eigen::Index chunk,
                                  const MatmulOperands<S>& ops) {
  { F::run(p, form, chunk, ops) } -> std::same_as<typename F::template Result<S>>;
};

// `forms` lists the distinct computations a family has, the serial recurrence first (the oracle's
// form). A form that is the same code as another — streamed where serial already is State::step over
// the sequence — is not listed, though run accepts it.
template <class F>
concept MechanismFamily = requires {
  { F::name } -> std::convertible_to<std::string_view>;
  { std::span<const Form>(F::forms) };
  requires F::forms.size() > 0 && F::forms[0] == Form::serial;
} && FamilyInScalar<F, double> && FamilyInScalar<F, float>;

template <MechanismFamily F>
std::vector<Form> forms_of() {
  return {F::forms.begin(), F::forms.end()};
}

template <MechanismFamily F>
constexpr bool has_form(Form form) {
  return std::ranges::find(F::forms, form) != F::forms.end();
}

// The batched driver: body(b, h) on every (sequence, head) pair of a [B, ·, H, ·] call, in order. Every
// family's batched verbs, forward and backward, are this loop around their per-head verb.
template <class Body>
void for_each_head(std::int64_t B, std::int64_t H, Body&& body) {
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) body(b, h);
}

// Family F's `form` on every pair: problem_of(b, h) builds the pair's problem, store(b, h, result) puts
// its result in place.
template <MechanismFamily F, class S, class ProblemOf, class Store>
void run_each_head(std::int64_t B, std::int64_t H, Form form, Eigen::Index chunk, OperandFormat operands,
                   ProblemOf&& problem_of, Store&& store) {
  const MatmulOperands<S> ops(operands);
  for_each_head(B, H, [&](std::int64_t b, std::int64_t h) { store(b, h, F::run(problem_of(b, h), form, chunk, ops)); });
}

}  // namespace larc::ref
