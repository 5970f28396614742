// The cores a process lends to the gate (DESIGN.md "The program"). `larc gate --jobs N` sets N: the
// gate's workers each hold one while they run a case group, and a reference computation over several
// (sequence, head) pairs — the oracle, its error estimate, the float and io baselines, the CPU
// subjects — runs its pairs on the cores no one holds (every registered mechanism's compute is split
// so; see mechanisms()). The split is exact: heads are independent, so the outputs are bitwise those
// of one call over all of them, for any budget. The budget is 1 by default: everything runs on the
// calling thread.
#pragma once

namespace larc::harness {

// Sets the budget to `cores` (at least 1), the calling thread holding one of them.
void set_core_budget(unsigned cores);
unsigned core_budget();

// Sets the budget for its lifetime and restores the previous one after.
class ScopedCoreBudget {
 public:
  explicit ScopedCoreBudget(unsigned cores);
  ~ScopedCoreBudget();
  ScopedCoreBudget(const ScopedCoreBudget&) = delete;
  ScopedCoreBudget& operator=(const ScopedCoreBudget&) = delete;

 private:
  unsigned previous_;
};

}  // namespace larc::harness
