// The HLA claim checks defined outside claims_hla.cpp, registered there in ledger order.
#pragma once

#include "larc/properties/claims.h"

namespace larc::props::hla_claims {

ClaimOutcome hla_c4(const ClaimConfig& cfg);  // claims_hla_scans.cpp
ClaimOutcome hla_c5(const ClaimConfig& cfg);
ClaimOutcome hla_c6(const ClaimConfig& cfg);
ClaimOutcome hla_c8(const ClaimConfig& cfg);
ClaimOutcome hla_c7(const ClaimConfig& cfg);  // claims_hla_forms.cpp
ClaimOutcome hla_c10(const ClaimConfig& cfg);

}  // namespace larc::props::hla_claims
