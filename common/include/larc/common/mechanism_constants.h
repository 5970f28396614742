// The mechanisms' fixed constants, one definition for the harness's mechanisms (harness/src/
// mechanisms_*.cpp: the reference's parameters and the oracle) and the CUDA kernels that compute the
// same mechanisms (gpu/src), so the two cannot drift apart. Dependency-free and header-only: gpu/ and
// harness/ both include it in every build, with or without CUDA (DESIGN.md "Layering rules"). The
// kernels compute in float: float(x) of each value below is the float nearest to it.
#pragma once

namespace larc::mechanism_constants {

inline constexpr double kla_eps = 1e-6;             // KLA's step β_t = η_t / (‖k_t‖² + ε)
inline constexpr double qk_l2norm_eps = 1e-6;       // FLA's in-kernel l2norm of q and k: x / √(‖x‖² + ε)
inline constexpr double la_ratio_eps = 1e-6;        // the ratio read's denominator ζ_tᵀφ(q_t) + ε (la-ratio)
inline constexpr double hla_normalized_eps = 1e-6;  // the normalised HLA read's denominator + ε
inline constexpr double vla_stab_eps = 1e-4;        // VLA: floor of δ_t and of the ratio read's denominator

}  // namespace larc::mechanism_constants
