# `autosync tune` end to end with the local runner (ctest mpi.tune_cli.np2, label mpi; registered
# by tests/CMakeLists.txt): every trial is a real `mpirun -np 2 autosync run` on this machine.
#   1. tune resnet50 (scaled to 2 %) on local-2 with a budget of 4 trials, 2 per round: the
#      records file then holds exactly 4 records, the progress shows trial 4 of 4
#   2. the same command with --budget 6 resumes: it reports the 4 trials it found, runs 2 more,
#      and the 6 records hold 6 distinct strategies (nothing run twice)
#   3. --confirm 2 on the finished records: no new strategy, the 2 best and the best baseline
#      (when it is not one of them) run once more, and the result is the median of their runs
#   4. an unknown runner is an error (exit 1) naming the valid ones
#   5. --compressors / --max-compression-ratio without --allow-lossy, an unknown compressor and a
#      ratio below 1 are errors (exit 1) naming the option
# Run as: cmake -DAUTOSYNC=<autosync> -DWORK=<scratch dir> -P learn_tune_cli.cmake
foreach(v AUTOSYNC WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "learn_tune_cli.cmake: pass -D${v}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(records "${WORK}/trials.jsonl")
set(tune "${AUTOSYNC}" tune --model resnet50 --scale 0.02 --np 2 --iters 2 --warmup 1 --per-round 2 --proposals 100
         --records "${records}")

function(check what)
  if(NOT (${ARGN}))
    message(FATAL_ERROR "tune_cli: ${what}")
  endif()
endfunction()
# The distinct strategy names in the records file: their count and the list.
function(distinct_names out_count out_names)
  file(STRINGS "${records}" lines)
  set(names "")
  foreach(line IN LISTS lines)
    string(JSON strategy GET "${line}" strategy)
    string(JSON name ERROR_VARIABLE jerr GET "${strategy}" name)
    list(APPEND names "${name}")
  endforeach()
  list(REMOVE_DUPLICATES names)
  list(LENGTH names n)
  set(${out_count} ${n} PARENT_SCOPE)
  set(${out_names} "${names}" PARENT_SCOPE)
endfunction()
function(count_records out)
  file(STRINGS "${records}" lines)
  list(LENGTH lines n)
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# 1.
execute_process(COMMAND ${tune} --budget 4 --confirm 0 WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "autosync tune --budget 4:\n${out}")
check("autosync tune failed (${rc}):\n${out}\n${err}" rc EQUAL 0)
count_records(n)
check("expected 4 records after --budget 4, found ${n}" n EQUAL 4)
string(FIND "${out}" "[   4/4]" at)
check("no progress line for trial 4 of 4" at GREATER -1)

# 2.
execute_process(COMMAND ${tune} --budget 6 --confirm 0 WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "autosync tune --budget 6:\n${out}")
check("autosync tune (resumed) failed (${rc}):\n${out}\n${err}" rc EQUAL 0)
string(FIND "${out}" "resumed 4 trial(s)" at)
check("the second run did not resume the 4 recorded trials" at GREATER -1)
count_records(n)
check("expected 6 records after --budget 6, found ${n}" n EQUAL 6)
distinct_names(distinct names)
check("a strategy was run twice: ${names}" distinct EQUAL 6)

# 3.
execute_process(COMMAND ${tune} --budget 6 --confirm 2 WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "autosync tune --budget 6 --confirm 2:\n${out}")
check("autosync tune --confirm 2 failed (${rc}):\n${out}\n${err}" rc EQUAL 0)
count_records(n)
check("expected 8 or 9 records after confirming 2 (+ the best baseline), found ${n}" n GREATER_EQUAL 8 AND n LESS_EQUAL 9)
string(REGEX MATCHALL "  confirm  " confirms "${out}")
list(LENGTH confirms nc)
math(EXPR expect "${n} - 6")
check("expected ${expect} confirm lines, found ${nc}" nc EQUAL expect)
string(FIND "${out}" "(upper median of its runs)" at)
check("the result does not say it is the median of the runs" at GREATER -1)
distinct_names(distinct names)
check("confirmation ran a new strategy: ${names}" distinct EQUAL 6)

# 4.
execute_process(COMMAND ${tune} --budget 1 --runner bogus WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("an unknown runner must exit 1, got ${rc}" rc EQUAL 1)
string(FIND "${err}" "unknown runner 'bogus'" at)
check("the error does not name the unknown runner:\n${err}" at GREATER -1)

# 5. the lossy budget: only with --allow-lossy, and an unknown compressor is named
execute_process(COMMAND ${tune} --budget 1 --compressors int8 WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("--compressors without --allow-lossy must exit 1, got ${rc}" rc EQUAL 1)
string(FIND "${err}" "--compressors" at)
check("the error does not name --compressors:\n${err}" at GREATER -1)
execute_process(COMMAND ${tune} --budget 1 --allow-lossy --compressors int9 WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("an unknown compressor must exit 1, got ${rc}" rc EQUAL 1)
string(FIND "${err}" "'int9' is not a compressor" at)
check("the error does not name the unknown compressor:\n${err}" at GREATER -1)
execute_process(COMMAND ${tune} --budget 1 --allow-lossy --max-compression-ratio 0.5 WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("a compression ratio below 1 must exit 1, got ${rc}" rc EQUAL 1)
string(FIND "${err}" "--max-compression-ratio" at)
check("the error does not name --max-compression-ratio:\n${err}" at GREATER -1)
