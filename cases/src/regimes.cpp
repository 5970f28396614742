#include "larc/cases/regimes.h"

namespace larc::cases {

std::string key_kind_name(KeyKind k) {
  switch (k) {
    case KeyKind::gaussian: return "gaussian";
    case KeyKind::unit: return "unit";
    case KeyKind::heavy_tailed: return "heavy_tailed";
    case KeyKind::near_collinear: return "near_collinear";
    case KeyKind::tiny_norm: return "tiny_norm";
    case KeyKind::huge_norm: return "huge_norm";
    case KeyKind::orthonormal: return "orthonormal";
  }
  return "?";
}

std::string gate_kind_name(GateKind g) {
  switch (g) {
    case GateKind::moderate: return "moderate";
    case GateKind::beta_one: return "beta_one";
    case GateKind::beta_tiny: return "beta_tiny";
    case GateKind::no_decay: return "no_decay";
    case GateKind::hard_decay: return "hard_decay";
  }
  return "?";
}

}  // namespace larc::cases
