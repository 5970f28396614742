// HLA claims (SPEC.md). Registered by all_claims(); the checks are added with the HLA issue.
#include "larc/properties/claims.h"

namespace larc::props {

void register_hla_claims(std::vector<Claim>&) {}

}  // namespace larc::props
