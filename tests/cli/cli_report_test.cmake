# `larc report --small` the way a user runs it: every figure (a PNG) and every data file is produced
# and the README shows each figure; without the H200 gate report the README says so, with one its
# GPU rows appear; without matplotlib the command fails before computing, naming the Debian package.
# -DLARC=<binary> -DLEDGER=<docs/claims.json> -DOUT=<scratch dir>
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
function(larc_report code dir)
  execute_process(COMMAND ${LARC} report --small --out ${dir} --claims-ledger ${LEDGER} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL ${code})
    message(FATAL_ERROR "larc report --small --out ${dir} ${ARGN}: exit ${rc}, expected ${code}\n${out}\n${err}")
  endif()
  set(LAST_ERR "${err}" PARENT_SCOPE)
endfunction()
function(expect_contains text part what)
  string(FIND "${text}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected '${part}' in:\n${text}")
  endif()
endfunction()

set(figures error_vs_T timestep_error state_norms vla_jacobian recall oracle_certification gradient_error_vs_T dg_forms)
set(data error_vs_T.csv timestep_error.csv accuracy_grid.json oracle_certification.csv state_norms.csv
    vla_jacobian.csv recall.csv claims.json gate_cpu.csv gradient_error_vs_T.csv dg_forms.csv)

# No H200 gate report: every figure and data file, and the README says the GPU rows are absent.
larc_report(0 ${OUT}/cpu --h200-gate ${OUT}/absent/gate.json)
file(READ ${OUT}/cpu/README.md readme)
foreach(f ${figures})
  set(png ${OUT}/cpu/${f}.png)
  if(NOT EXISTS ${png})
    message(FATAL_ERROR "figure ${f}.png was not written")
  endif()
  file(READ ${png} magic LIMIT 8 HEX)
  file(SIZE ${png} size)
  if(NOT magic STREQUAL "89504e470d0a1a0a" OR size LESS 5000)
    message(FATAL_ERROR "${f}.png is not a drawn PNG (magic ${magic}, ${size} bytes)")
  endif()
  expect_contains("${readme}" "](${f}.png)" "README shows ${f}.png")
endforeach()
foreach(d ${data})
  file(STRINGS ${OUT}/cpu/data/${d} lines)
  list(LENGTH lines n)
  if(n LESS 2)
    message(FATAL_ERROR "data file ${d} is missing or empty")
  endif()
  expect_contains("${readme}" "(data/${d})" "README links data/${d}")
endforeach()
expect_contains("${readme}" "GPU (H200): no results" "README says the H200 report is absent")
expect_contains("${readme}" "`larc report --out ${OUT}/cpu --small" "README names the command")
# Section 7: a row per gradient of every twin, and dg's two forms per dtype.
file(READ ${OUT}/cpu/data/gradient_error_vs_T.csv rows)
foreach(row "\ngdn-backward,dg,bf16,16," "\ngdn-backward,dh0,fp32,64," "\nccq-gdn-backward,dlambda,fp16,16,")
  expect_contains("${rows}" "${row}" "gradient_error_vs_T.csv")
endforeach()
file(READ ${OUT}/cpu/data/dg_forms.csv rows)
foreach(row "\nbf16,16,1,direct," "\nfp32,64,1,identity,")
  expect_contains("${rows}" "${row}" "dg_forms.csv")
endforeach()

# An H200 gate report (one result of a GPU kernel, in `larc gate --json`'s schema): its rows appear.
file(WRITE ${OUT}/h200_gate.json [=[{"tree_hash": "test-tree", "shard": "0/1", "results": [{"kernel": "gpu-test-kernel",
  "mechanism": "gdn", "dtype": "bf16", "shape": "1,64,1,4,4", "seed": 3, "pass": true, "worst_ratio": 0.25,
  "max_rel_err": 0.00375, "rel_rms": 0.002}]}]=])
larc_report(0 ${OUT}/gpu --h200-gate ${OUT}/h200_gate.json)
file(READ ${OUT}/gpu/README.md readme)
expect_contains("${readme}" "GPU (H200).** From `${OUT}/h200_gate.json` (tree hash `test-tree`" "README reads the H200 report")
expect_contains("${readme}" "| gpu-test-kernel | gdn | 1 | 0 | pass | 0.25 | 0.00375 | – | – |" "the GPU kernel's gate status")
file(READ ${OUT}/gpu/data/error_vs_T.csv rows)
expect_contains("${rows}" "\nh200,gpu-test-kernel,gdn,gpu kernel,bf16,64,3,0.00375,0.002," "error_vs_T.csv holds the H200 row")

# No Python with matplotlib: exit 1 before computing, naming the package.
execute_process(COMMAND ${CMAKE_COMMAND} -E env LARC_PYTHON=${OUT}/no-such-python ${LARC} report --small
                --out ${OUT}/nopython RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "larc report without matplotlib: exit ${rc}, expected 1\n${err}")
endif()
expect_contains("${err}" "python3-matplotlib" "the missing-matplotlib message")
if(EXISTS ${OUT}/nopython/data/claims.json)
  message(FATAL_ERROR "larc report without matplotlib computed before failing")
endif()
