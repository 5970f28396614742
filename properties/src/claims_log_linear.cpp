// LL claims (SPEC.md). Registered by all_claims(); the checks are added with the LL issue.
#include "larc/properties/claims.h"

namespace larc::props {

void register_log_linear_claims(std::vector<Claim>&) {}

}  // namespace larc::props
