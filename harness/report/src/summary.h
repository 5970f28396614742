// The one-page summary at the top of `larc report`: each claim's verdict, each kernel's gate status and
// the largest error seen per kernel and dtype, with links to the evidence.
#pragma once

#include <string>

#include "h200.h"
#include "section.h"

namespace larc::report {

// The claims: run every registered claim at its defaults (seed ctx.seed), or, when `claims_ledger`
// names a ledger written by `larc claims --json`, read the verdicts from it. The CPU gate: the
// reference's CPU subjects over the gate's default grid and randomized cases (a tiny grid with
// ctx.small). The GPU kernels: `h200`, when present.
Section summary_section(const ReportContext& ctx, const std::string& claims_ledger, const H200Gate& h200);

}  // namespace larc::report
