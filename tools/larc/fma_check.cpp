// In a LARC_FMA build every host unit may run FMA (and AVX) instructions, static initialisers included:
// this check runs before them (constructor priority 101) from a unit built without either, and refuses a
// CPU without FMA by name instead of letting the first such instruction kill the program.
#include <cstdio>
#include <cstdlib>

__attribute__((constructor(101))) static void refuse_a_cpu_without_fma() {
  __builtin_cpu_init();  // libgcc's own constructor, which fills the CPU model, may not have run yet
  if (__builtin_cpu_supports("fma")) return;
  std::fputs("larc: built with LARC_FMA (FMA instructions) and this CPU has none: rebuild with -DLARC_FMA=OFF\n", stderr);
  std::_Exit(2);
}
