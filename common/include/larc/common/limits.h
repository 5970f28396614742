// What a kernel takes, declared once: the limits of a GPU kernel's registry entry (gpu/api.h) are the
// limits of the gate subject it becomes (harness/subject.h), passed through unchanged. Dependency-free
// like dtype.h.
#pragma once

#include <cstdint>
#include <vector>

namespace larc {

struct ShapeLimits {
  // The largest sizes it takes (0: no limit of its own) and the smallest K (0: any).
  std::int64_t max_B = 0, max_T = 0, max_H = 0, max_K = 0, max_V = 0;
  std::int64_t min_K = 0;
  std::vector<std::int64_t> head_dims;  // when not empty, the only K (and V) it takes
  // Value heads grouped over the query/key heads (FLA's GVA): v, gates, states and o with HV heads,
  // a multiple of q's and k's H, value head j reading q, k of head j / (HV/H).
  bool value_head_groups = false;
  bool varlen = false;         // takes packed sequences and cu_seqlens (B = 1)
  // Takes cases whose sequences have lengths of their own (the seq_lens input: rows past a sequence's
  // length are padding, every output there zero); cases with one are skipped otherwise.
  bool ragged = false;
  // With ragged: leaves the padding rows unwritten (FLA's varlen kernels skip what follows the last offset);
  // such rows count as the zeros they must otherwise hold.
  bool padding_unwritten = false;
  bool initial_state = true;   // reads an "initial_state" input (cases with one are skipped otherwise)
  bool scale = true;           // reads the read scale (cases whose scale_factor is not 1 are skipped otherwise)
  // The chunk length its arithmetic cuts a sequence into from the first token (0: none, a
  // token-by-token recurrence): a split on a multiple of it repeats the whole launch's arithmetic.
  std::int64_t chunk = 0;
};

}  // namespace larc
