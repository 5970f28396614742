# One row of the CLI bad-input matrix (tests/cli/bad_input_matrix.cmake): runs LARC with ARGS (separated
# by spaces) and requires exit code CODE and MESSAGE (a regular expression, or read from MESSAGE_FILE)
# in stdout + stderr. -DLARC=<binary> -DCODE=<exit code> -DMESSAGE=<regex> | -DMESSAGE_FILE=<file> -DARGS=<args>
if(MESSAGE_FILE)
  file(READ ${MESSAGE_FILE} MESSAGE)
endif()
separate_arguments(ARGS UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${LARC} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL CODE)
  message(FATAL_ERROR "larc ${ARGS}: exit ${rc}, expected ${CODE}\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "${MESSAGE}")
  message(FATAL_ERROR "larc ${ARGS}: the output does not match /${MESSAGE}/:\n${out}${err}")
endif()
