# A rank that dies or gets stuck mid-iteration ends the job with an error, never a hang
# (ctest mpi.rank_failure.<mode>, label mpi; registered by tests/mpi/CMakeLists.txt).
#   mpirun -np 4 autosync_mpi_rank_failure --mode MODE --victim 2 --iteration 3
# with AUTOSYNC_TIMEOUT_S=TIMEOUT_S, and checks:
#   - the job exits non-zero, within TIMEOUT_S + 30 s of wall time (execute_process' own limit
#     is larger: exceeding it is reported as a hang);
#   - no rank completed its iterations;
#   - kill / exit: the output names rank 2 (Open MPI's runtime reports the dead process and ends
#     the job);
#   - stop: a survivor's wait timed out "after TIMEOUT_S s waiting for rank 2", a survivor aborted
#     the job, and nobody gave up before the timeout could have passed.
# Run as: cmake -DJOB=<autosync_mpi_rank_failure> -DMPIEXEC=<mpiexec> [-DNP_FLAG=-np]
#               [-DPREFLAGS=...] -DMODE=kill|stop|exit [-DTIMEOUT_S=3] -P run_rank_failure.cmake
foreach(v JOB MPIEXEC MODE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_rank_failure.cmake: pass -D${v}=...")
  endif()
endforeach()
if(NOT NP_FLAG)
  set(NP_FLAG -np)
endif()
if(NOT TIMEOUT_S)
  set(TIMEOUT_S 3)
endif()
set(victim 2)
math(EXPR bound "${TIMEOUT_S} + 30")
math(EXPR hang "${bound} + 60")

function(check what)
  if(NOT (${ARGN}))
    message(FATAL_ERROR "rank_failure (${MODE}): ${what}\n--- output ---\n${all}")
  endif()
endfunction()

set(ENV{AUTOSYNC_TIMEOUT_S} ${TIMEOUT_S})
string(TIMESTAMP t0 "%s" UTC)
execute_process(COMMAND ${MPIEXEC} --oversubscribe --allow-run-as-root ${NP_FLAG} 4 ${PREFLAGS} "${JOB}"
                        --mode ${MODE} --victim ${victim} --iteration 3
                TIMEOUT ${hang} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(TIMESTAMP t1 "%s" UTC)
math(EXPR elapsed "${t1} - ${t0}")
set(all "${out}\n${err}")
message(STATUS "rank_failure ${MODE}: exit '${rc}' after ${elapsed} s\n${all}")

check("the job did not end within ${hang} s (a hang): '${rc}'" NOT rc MATCHES "[Tt]ime")
check("the job exited 0" NOT rc EQUAL 0)
check("the job took ${elapsed} s, more than ${bound} s" elapsed LESS_EQUAL ${bound})
string(FIND "${all}" "rank ${victim}: " at)
check("the victim did not report its failure injection" at GREATER -1)
string(FIND "${all}" "completed" at)
check("a rank completed every iteration" at EQUAL -1)
if(MODE STREQUAL "stop")
  string(REGEX MATCH "rank [0-9]+: failed after [0-9.]+ s: 'rank ${victim}': mpi [a-z_]+ on rank [0-9]+ timed out after ${TIMEOUT_S} s waiting for rank ${victim}" named "${all}")
  check("no survivor's error names rank ${victim} after a ${TIMEOUT_S} s timeout" named)
  string(FIND "${all}" "aborts the job" at)
  check("no survivor aborted the job" at GREATER -1)
  string(REGEX MATCHALL "failed after [0-9.]+ s" fails "${all}")
  foreach(f IN LISTS fails)
    string(REGEX REPLACE "failed after ([0-9]+).*" "\\1" s "${f}")
    check("a survivor gave up after ${s} s, before the ${TIMEOUT_S} s timeout" s GREATER_EQUAL ${TIMEOUT_S})
  endforeach()
else()
  string(REGEX MATCH "rank ${victim} with PID|process rank ${victim}|Process name: \\[\\[[0-9]+,[0-9]+\\],${victim}\\]" named "${all}")
  check("the output does not name rank ${victim} as the process that ended" named)
endif()
