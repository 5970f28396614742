# larc as a CMake package, the way a kernel repository uses it: install this build into a fresh
# prefix, configure examples/out_of_tree_kernel against it with find_package(larc), build it, and run
# its gate: the honest kernel passes (exit 0), the same kernel with a planted defect fails (exit 1).
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
run("configuring the example" ${CMAKE_COMMAND} -S ${SOURCE}/examples/out_of_tree_kernel -B ${OUT}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${OUT}/prefix -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX})
run("building the example" ${CMAKE_COMMAND} --build ${OUT}/build)
run("the example's gate" ${OUT}/build/gate_my_gdn)
message(STATUS "${run_out}")
run("any exit" ${OUT}/build/gate_my_gdn --planted-defect)
if(NOT run_rc EQUAL 1)
  message(FATAL_ERROR "the gate passed a kernel whose state carry is scaled by 0.99 (exit ${run_rc}, expected 1):\n${run_out}")
endif()
