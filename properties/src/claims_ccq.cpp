// CCQ claims (SPEC.md). Registered by all_claims(); the checks are added with the CCQ issue.
#include "larc/properties/claims.h"

namespace larc::props {

void register_ccq_claims(std::vector<Claim>&) {}

}  // namespace larc::props
