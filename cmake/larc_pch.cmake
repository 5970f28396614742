# Precompiled headers (docs/cli.md "Build time"): most of larc's translation units parse the same
# third-party headers — Eigen and Boost.Multiprecision with qd through larc/reference/scalar.h, and in
# the tests GoogleTest and RapidCheck — which costs seconds per unit before any of larc's own code is
# compiled. GCC only: the sanitizer leg's clang build and -DLARC_PCH=OFF parse them in every unit.
option(LARC_PCH "Precompile the third-party headers every translation unit parses (GCC)" ON)
set(LARC_PCH_SCALAR <Eigen/Dense> ${PROJECT_SOURCE_DIR}/reference/include/larc/reference/scalar.h)

# larc_precompile(TARGET HEADER...): TARGET's C++ sources are compiled with HEADER... precompiled.
function(larc_precompile target)
  if(LARC_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# larc_reuse_precompiled(TARGET FROM): TARGET's sources use FROM's precompiled header (the same
# compile options and definitions; include paths may differ).
function(larc_reuse_precompiled target from)
  if(LARC_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_precompile_headers(${target} REUSE_FROM ${from})
  endif()
endfunction()
