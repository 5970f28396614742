# larc as a CMake package, the way a kernel repository uses it: install this build into a fresh
# prefix, move the prefix elsewhere (an install must not depend on where it was put, nor on the build
# machine's checkout), configure examples/out_of_tree_kernel against the moved prefix with
# find_package(larc), build it, and run its gate: the honest kernel passes (exit 0), the same kernel with
# a planted defect fails (exit 1). The installed larc runs from the moved prefix with neither git nor
# the checkout reachable: its tree hash was fixed at build time, and it names no path of the checkout
# (the CUDA line tables that -lineinfo keeps for the profilers aside: their file names and the
# gpu/src directory itself).
cmake_policy(VERSION 3.25)
file(REMOVE_RECURSE ${OUT})
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(run_rc ${rc} PARENT_SCOPE)
  set(run_out "${out}${err}" PARENT_SCOPE)
  if(NOT what STREQUAL "any exit" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${OUT}/prefix)
foreach(f lib/cmake/larc/larcConfig.cmake lib/cmake/larc/larcTargets.cmake include/larc/fixtures/safetensors.h
          include/larc/harness/subject.h bin/larc)
  if(NOT EXISTS ${OUT}/prefix/${f})
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()
if(NOT EXISTS ${OUT}/prefix/share/larc/plot_accuracy.py)
  message(FATAL_ERROR "cmake --install did not install share/larc/plot_accuracy.py (larc report's plotting script)")
endif()
file(RENAME ${OUT}/prefix ${OUT}/moved)

# Nothing of the checkout in the installed program.
string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" source_regex "${SOURCE}")
file(STRINGS ${OUT}/moved/bin/larc checkout_paths REGEX "${source_regex}")
list(FILTER checkout_paths EXCLUDE REGEX "${source_regex}/gpu/src(/|$)")
if(checkout_paths)
  message(FATAL_ERROR "the installed larc names the build checkout ${SOURCE}:\n${checkout_paths}")
endif()
# It runs from the moved prefix, outside the checkout, without git on the PATH, and reports the tree
# hash it was built with.
file(MAKE_DIRECTORY ${OUT}/elsewhere)
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LARC_TREE_HASH PATH=${OUT}/elsewhere
    ${OUT}/moved/bin/larc gate --subject ref-serial-f32 --mechanism la --dtype fp32 --no-grid --random 1
    --json ${OUT}/elsewhere/gate.json
  WORKING_DIRECTORY ${OUT}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the moved install's larc gate failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${OUT}/elsewhere/gate.json j)
string(JSON tree GET "${j}" tree_hash)
if(EXISTS ${SOURCE}/.git AND NOT tree MATCHES "^[0-9a-f]+(-dirty)?$")
  message(FATAL_ERROR "the moved install's larc reports tree hash '${tree}', expected the one fixed at build time")
endif()
message(STATUS "moved install: larc gate ran outside the checkout without git, tree hash ${tree}")
# `larc report` finds its plotting script in the moved prefix (share/larc), where Python has matplotlib.
set(python "")
find_program(python3_on_path python3)
foreach(candidate ${python3_on_path} /usr/bin/python3)
  if(NOT python AND EXISTS ${candidate})
    execute_process(COMMAND ${candidate} -s -c "import matplotlib" RESULT_VARIABLE no_matplotlib OUTPUT_QUIET ERROR_QUIET)
    if(no_matplotlib EQUAL 0)
      set(python ${candidate})
    endif()
  endif()
endforeach()
if(python)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LARC_PYTHON=${python} PATH=${OUT}/elsewhere
      ${OUT}/moved/bin/larc report --small --out ${OUT}/elsewhere/report --claims-ledger ${SOURCE}/docs/claims.json
    WORKING_DIRECTORY ${OUT}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT EXISTS ${OUT}/elsewhere/report/error_vs_T.png)
    message(FATAL_ERROR "the moved install's larc report failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "moved install: larc report drew its figures with share/larc/plot_accuracy.py")
else()
  message(STATUS "moved install: larc report not run (no python3 with matplotlib)")
endif()

run("configuring the example" ${CMAKE_COMMAND} -S ${SOURCE}/examples/out_of_tree_kernel -B ${OUT}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${OUT}/moved -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX})
run("building the example" ${CMAKE_COMMAND} --build ${OUT}/build)
run("the example's gate" ${OUT}/build/gate_my_gdn)
message(STATUS "${run_out}")
run("any exit" ${OUT}/build/gate_my_gdn --planted-defect)
if(NOT run_rc EQUAL 1)
  message(FATAL_ERROR "the gate passed a kernel whose state carry is scaled by 0.99 (exit ${run_rc}, expected 1):\n${run_out}")
endif()
