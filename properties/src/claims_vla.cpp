// VLA claims (SPEC.md). Registered by all_claims(); the checks are added with the VLA issue.
#include "larc/properties/claims.h"

namespace larc::props {

void register_vla_claims(std::vector<Claim>&) {}

}  // namespace larc::props
