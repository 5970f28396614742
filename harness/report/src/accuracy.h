// Sections 1, 2 and 6 of `larc report`, from one pass over the accuracy grid: every registered
// mechanism × T × seed × dtype, the reference's forms computed in float from inputs rounded to the
// dtype (the gate's CPU subjects ref-<form>-f32) against the dd oracle on the same inputs; and section
// 7, the same for the gradient twins (their float serial adjoint) over shorter T, with GDN's dg in its
// direct and identity forms under strong decay.
#pragma once

#include "h200.h"
#include "section.h"

namespace larc::report {

struct AccuracySections {
  Section error_vs_length;       // 1: error against the oracle versus T (+ the H200 rows when present)
  Section timestep_error;        // 2: per-timestep error of the chunked forms beside the serial ones
  Section oracle_certification;  // 6: the differences between ladder rungs and the oracle's margin
  Section gradients;             // 7: the gradient twins' error versus T; dg's direct and identity forms
};

AccuracySections accuracy_sections(const ReportContext& ctx, const H200Gate& h200);

}  // namespace larc::report
