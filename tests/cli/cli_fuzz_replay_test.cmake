# Replays the corpus a fuzz campaign saved (fuzz_corpus_test writes one with a planted kernel) through
# `larc gate --fixtures`, as CI replays a committed corpus: every fixture is read and run by the
# registered gdn subjects (the planted kernel is not registered in larc), which pass it.
execute_process(COMMAND ${LARC} gate --fixtures ${CORPUS} --no-grid --random 0 --json ${CORPUS}.replay.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "ref-chunked-f32 +gdn +fp32" OR NOT out MATCHES "[1-9][0-9]* cases, 0 failed")
  message(FATAL_ERROR "larc gate --fixtures ${CORPUS}: exit ${rc}\n${out}\n${err}")
endif()
file(READ ${CORPUS}.replay.json j)
string(JSON origin GET "${j}" results 0 origin)
if(NOT origin MATCHES "\\.safetensors$")
  message(FATAL_ERROR "the replayed case's origin is '${origin}', not a corpus fixture")
endif()
