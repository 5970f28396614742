# Runs `larc fuzz` and `larc merge` the way a user does: two shards merged equal one unsharded run of
# the same seed (timings aside); the shard taken from GTEST_*, SLURM_* and JOB_COMPLETION_INDEX
# equals --shard; merge rejects shards that are not one campaign, naming the problem; usage errors
# exit 2.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

# larc_exit(VAR ARGS...): runs larc, sets VAR to its exit code and larc_output to stdout + stderr.
function(larc_exit var)
  execute_process(COMMAND ${LARC} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${var} ${rc} PARENT_SCOPE)
  set(larc_output "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect_exit code)
  larc_exit(rc ${ARGN})
  if(NOT rc EQUAL ${code})
    message(FATAL_ERROR "larc ${ARGN}: exit ${rc}, expected ${code}\n${larc_output}")
  endif()
  set(larc_output "${larc_output}" PARENT_SCOPE)
endfunction()
function(expect_message code regex)
  expect_exit(${code} ${ARGN})
  if(NOT larc_output MATCHES "${regex}")
    message(FATAL_ERROR "larc ${ARGN}: output does not match '${regex}':\n${larc_output}")
  endif()
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/fuzz_report_check.cmake)  # equal_results()

set(campaign fuzz --cases 10 --seed 7 --max-shape 2,80,2,16,16 --corpus ${OUT}/corpus)
larc_exit(whole_rc ${campaign} --shard 0/1 --json ${OUT}/whole.json --junit ${OUT}/whole.xml)
if(whole_rc GREATER 1)
  message(FATAL_ERROR "larc ${campaign}: exit ${whole_rc}\n${larc_output}")
endif()
larc_exit(a_rc ${campaign} --shard 0/2 --json ${OUT}/a.json)
larc_exit(b_rc ${campaign} --shard 1/2 --json ${OUT}/b.json)
# Shards in any order; merge exits as the unsharded run does (1 when it holds failures).
expect_exit(${whole_rc} merge ${OUT}/b.json ${OUT}/a.json --json ${OUT}/merged.json --junit ${OUT}/merged.xml
            --markdown ${OUT}/merged.md)
equal_results(${OUT}/merged.json ${OUT}/whole.json)
file(READ ${OUT}/merged.json merged)
file(READ ${OUT}/whole.json whole)
string(JSON merged_campaign GET "${merged}" campaign)
string(JSON whole_campaign GET "${whole}" campaign)
string(JSON same_campaign EQUAL "${merged_campaign}" "${whole_campaign}")
string(JSON merged_shard GET "${merged}" shard)
if(NOT same_campaign OR NOT merged_shard STREQUAL "0/1")
  message(FATAL_ERROR "merged campaign ${merged_campaign} (shard ${merged_shard}) vs unsharded ${whole_campaign}")
endif()
foreach(i RANGE 9)
  string(JSON index GET "${merged}" results ${i} index)
  if(NOT index EQUAL i)
    message(FATAL_ERROR "merged result ${i} is campaign case ${index}")
  endif()
endforeach()
file(READ ${OUT}/merged.xml merged_xml)
file(READ ${OUT}/whole.xml whole_xml)
string(REGEX REPLACE "time=\"[^\"]*\"" "" merged_xml "${merged_xml}")
string(REGEX REPLACE "time=\"[^\"]*\"" "" whole_xml "${whole_xml}")
if(NOT merged_xml STREQUAL whole_xml)
  message(FATAL_ERROR "the merged JUnit XML differs from the unsharded run's")
endif()

# The shard from the environment of GoogleTest, Slurm and a Kubernetes Indexed Job.
foreach(env "GTEST_SHARD_INDEX=1;GTEST_TOTAL_SHARDS=2" "SLURM_ARRAY_TASK_ID=5;SLURM_ARRAY_TASK_MIN=4;SLURM_ARRAY_TASK_COUNT=2"
            "JOB_COMPLETION_INDEX=1;LARC_SHARD_COUNT=2")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${LARC} ${campaign} --json ${OUT}/env.json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL b_rc OR NOT out MATCHES "shard 1/2 \\(from ")
    message(FATAL_ERROR "${env}: exit ${rc} (shard 1/2 exited ${b_rc})\n${out}\n${err}")
  endif()
  equal_results(${OUT}/env.json ${OUT}/b.json)
endforeach()

# Shards that are not one campaign.
expect_message(2 "shard 0/2 given twice" merge ${OUT}/a.json ${OUT}/a.json --json ${OUT}/x.json)
expect_message(2 "shards missing: 1/2" merge ${OUT}/a.json --json ${OUT}/x.json)
expect_message(2 "a.json: shard 0/2 of 2 shards, .*whole.json is one of 1" merge ${OUT}/whole.json ${OUT}/a.json
               --json ${OUT}/x.json)
larc_exit(other_rc fuzz --cases 10 --seed 8 --max-shape 2,80,2,16,16 --corpus ${OUT}/corpus --shard 1/2 --json ${OUT}/other.json)
expect_message(2 "other.json: a different campaign from .*a.json: seed \\(7 vs 8\\)" merge ${OUT}/a.json
               ${OUT}/other.json --json ${OUT}/x.json)
file(WRITE ${OUT}/garbage.json "not json")
expect_message(2 "garbage.json: not JSON" merge ${OUT}/garbage.json --json ${OUT}/x.json)
expect_exit(2 merge ${OUT}/a.json ${OUT}/b.json)

# Usage errors.
expect_message(2 "exactly one of --minutes M or --cases N" fuzz)
expect_exit(2 fuzz --cases 3 --minutes 1)
expect_message(2 "unknown 'no-such-kernel'" fuzz --cases 1 --subject no-such-kernel)
expect_message(2 "not below the count" fuzz --cases 1 --shard 2/2)
expect_exit(2 fuzz --cases 1 --target speed)
expect_exit(2 fuzz --cases 1 --dtype fp8)
expect_exit(2 fuzz --cases 1 --json ${OUT}/no/such/dir/r.json)
