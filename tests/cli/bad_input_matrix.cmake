# The bad-input matrix of the `larc` command line (docs/robustness.md): one CTest test per row
# (cli.bad_input.<row>, labels "cli" and "bad_input"), each running larc on one bad value and
# requiring exit code 2 and a message naming the option or field, within 60 s (a hang fails). Rows
# already covered by cli.gate, cli.fuzz_merge_equals_unsharded, cli.fixtures_show and
# cli.claims_exit_codes are listed in docs/robustness.md, not repeated here. Included from
# tests/cli/CMakeLists.txt.
set(LARC_BAD_INPUTS ${CMAKE_CURRENT_BINARY_DIR}/bad_inputs)
add_executable(bad_fixture_writer bad_fixture_writer.cpp)
target_link_libraries(bad_fixture_writer PRIVATE larc_harness)
target_include_directories(bad_fixture_writer PRIVATE ${LARC_TESTS_DIR})  # bad_fixtures.h
add_test(NAME cli.bad_input_files COMMAND bad_fixture_writer ${LARC_BAD_INPUTS})
set_tests_properties(cli.bad_input_files PROPERTIES FIXTURES_SETUP larc_bad_inputs LABELS "cli;bad_input")

# larc_bad_input(ROW MESSAGE ARGS...): `larc ARGS` must exit 2 with MESSAGE (a regular expression;
# "FILE:<path>" reads it from the file).
function(larc_bad_input row message)
  string(JOIN " " args ${ARGN})
  if(message MATCHES "^FILE:(.*)")
    set(expect "-DMESSAGE_FILE=${CMAKE_MATCH_1}")
  else()
    set(expect "-DMESSAGE=${message}")
  endif()
  add_test(NAME cli.bad_input.${row} COMMAND ${CMAKE_COMMAND} -DLARC=$<TARGET_FILE:larc> -DCODE=2 "${expect}"
    "-DARGS=${args}" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_expect.cmake)
  set_tests_properties(cli.bad_input.${row} PROPERTIES LABELS "cli;bad_input" TIMEOUT 60
    FIXTURES_REQUIRED larc_bad_inputs)
endfunction()

set(whole "expected a whole number from")
# larc gate
larc_bad_input(gate_seed_negative "--seed: ${whole} 0 to 18446744073709551615, got '-1'" gate --seed -1)
larc_bad_input(gate_seed_not_a_number "--seed: ${whole} 0 .*got 'abc'" gate --seed abc)
larc_bad_input(gate_random_negative "--random: ${whole} 0 .*got '-3'" gate --no-grid --random -3)
larc_bad_input(gate_shard_count_zero "--shard-count: ${whole} 1 .*got '0'" gate --shard-count 0)
larc_bad_input(gate_shard_malformed "--shard: expected j/n \\(e.g. 0/4\\), got '1of2'" gate --shard 1of2)
larc_bad_input(gate_shape_zero_length "shape: T must be at least 1, got 0" gate --shape 1,0,1,2,2)
larc_bad_input(gate_shape_zero_head_dim "shape: K must be at least 1, got 0" gate --shape 1,4,1,0,2)
larc_bad_input(gate_shape_past_32_bits "gdn tensor 'q' BTHK would hold more than 2\\^31 - 1 elements"
  gate --mechanism gdn --shape 2,65536,256,256,1)
larc_bad_input(gate_knob_nan "knob 'decay_max': expected a value in .*got nan"
  gate --mechanism gdn --shape 1,4,1,2,2 --knob decay_max=nan)
larc_bad_input(gate_knob_unknown "--knob: no selected mechanism has a knob named 'nope'" gate --knob nope=1)
# A larc fixture that is a valid safetensors file but not a valid case (tests/bad_fixtures.h), replayed;
# the message each must name is the one bad_input_api_test checks, written beside it.
file(READ ${LARC_TESTS_DIR}/bad_fixtures.h bad_fixtures_h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${LARC_TESTS_DIR}/bad_fixtures.h)
string(REGEX MATCHALL "\n *\\{\"[a-z_]+\", \"" bad_fixture_rows "${bad_fixtures_h}")
foreach(entry ${bad_fixture_rows})
  string(REGEX MATCH "[a-z_]+" row "${entry}")
  larc_bad_input(gate_fixture_${row} "FILE:${LARC_BAD_INPUTS}/${row}.message"
    gate --no-grid --random 0 --fixtures ${LARC_BAD_INPUTS}/${row}.safetensors)
endforeach()
# larc diff
larc_bad_input(diff_fixture_beta_above_two "beta_above_two\\.safetensors: gdn: input 'beta' holds 2\\.5"
  diff ${LARC_BAD_INPUTS}/beta_above_two.safetensors ${LARC_BAD_INPUTS}/good.safetensors --prefix oracle.)
larc_bad_input(diff_fixture_other_format_version "format is 'larc-fixture/2' \\(written by larc 9\\.0\\.0\\)"
  diff ${LARC_BAD_INPUTS}/other_format_version.safetensors ${LARC_BAD_INPUTS}/good.safetensors --prefix oracle.)
larc_bad_input(diff_candidate_wrong_shape "tensor 'o': expected shape \\[1, 5, 1, 2\\], got \\[1, 5, 1, 3\\]"
  diff ${LARC_BAD_INPUTS}/good.safetensors ${LARC_BAD_INPUTS}/wrong_o_candidate.safetensors)
larc_bad_input(diff_candidate_not_safetensors "not_a_report\\.json: header length"
  diff ${LARC_BAD_INPUTS}/good.safetensors ${LARC_BAD_INPUTS}/not_a_report.json)
larc_bad_input(diff_candidate_missing "no_such\\.safetensors: cannot open"
  diff ${LARC_BAD_INPUTS}/good.safetensors ${LARC_BAD_INPUTS}/no_such.safetensors)
# larc fuzz
larc_bad_input(fuzz_cases_negative "--cases: ${whole} 1 .*got '-1'" fuzz --cases -1)
larc_bad_input(fuzz_cases_zero "--cases: ${whole} 1 .*got '0'" fuzz --cases 0)
larc_bad_input(fuzz_cases_past_2_to_64 "--cases: ${whole} 1 .*got '18446744073709551616'" fuzz --cases 18446744073709551616)
larc_bad_input(fuzz_minutes_nan "--minutes: expected minutes above 0 and at most 1000000, got 'nan'" fuzz --minutes nan)
larc_bad_input(fuzz_minutes_inf "--minutes: expected minutes .*got 'inf'" fuzz --minutes inf)
larc_bad_input(fuzz_minutes_zero "--minutes: expected minutes .*got '0'" fuzz --minutes 0)
larc_bad_input(fuzz_minutes_past_the_clock "--minutes: expected minutes .*got '1e308'" fuzz --minutes 1e308)
larc_bad_input(fuzz_seed_negative "--seed: ${whole} 0 .*got '-1'" fuzz --cases 1 --seed -1)
larc_bad_input(fuzz_shard_count_zero "--shard-count: ${whole} 1 .*got '0'" fuzz --cases 1 --shard-count 0)
larc_bad_input(fuzz_max_shape_zero_length "shape: T must be at least 1, got 0" fuzz --cases 1 --max-shape 2,0,2,8,8)
larc_bad_input(fuzz_max_shape_past_32_bits "gdn tensor 'q' BTHK would hold more than 2\\^31 - 1 elements"
  fuzz --cases 1 --mechanism gdn --max-shape 2,99999999999,2,64,64)
larc_bad_input(fuzz_resume_without_json "--resume: give --json FILE" fuzz --cases 1 --resume)
larc_bad_input(fuzz_resume_not_json "--resume: .*not_a_report\\.json: not JSON"
  fuzz --cases 1 --resume --json ${LARC_BAD_INPUTS}/not_a_report.json)
# larc fixtures gen
larc_bad_input(gen_shape_zero_length "shape: T must be at least 1, got 0"
  fixtures gen --mechanism gdn --shape 1,0,1,2,2 --out ${LARC_BAD_INPUTS}/x.safetensors)
larc_bad_input(gen_seed_negative "--seed: ${whole} 0 .*got '-1'"
  fixtures gen --mechanism gdn --seed -1 --out ${LARC_BAD_INPUTS}/x.safetensors)
larc_bad_input(gen_knob_out_of_range "knob 'beta_hi': expected a value in"
  fixtures gen --mechanism gdn --knob beta_hi=3 --out ${LARC_BAD_INPUTS}/x.safetensors)
larc_bad_input(gen_unknown_mechanism "mechanism: unknown 'nope'" fixtures gen --mechanism nope --out ${LARC_BAD_INPUTS}/x.safetensors)
larc_bad_input(gen_without_out "fixtures gen: give --mechanism and --out" fixtures gen --mechanism gdn)
larc_bad_input(gen_unwritable_out "no/such/dir/x\\.safetensors: cannot write"
  fixtures gen --mechanism gdn --shape 1,4,1,2,2 --out ${LARC_BAD_INPUTS}/no/such/dir/x.safetensors)
