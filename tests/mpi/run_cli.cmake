# `autosync run` end to end (ctest mpi.run_cli.np2, label mpi; registered by tests/mpi/CMakeLists.txt):
#   1. autosync optimize --model resnet50 --cluster local-2 --out s.json
#   2. mpirun -np 2 autosync run --strategy s.json --model resnet50 --iters 3 --records trials.jsonl
#      (every rank checks the exact sums of the first iteration; the run fails otherwise)
#   3. trials.jsonl holds exactly one line, a record (learn/records.hpp) with version 1, the
#      zoo model, the local-2 cluster with 2 ranks per node, 3 iterations of 2 ranks each, the
#      maxima equal to the largest per-rank value, a prediction and the environment
#   3b. the default packing leaves settings.pack out; `--pack never` writes "never" into its
#      record, which `autosync learn` leaves out and counts, and --bucket-times writes every
#      rank's end of every bucket; `--pack sometimes` is refused before anything runs
#   4. a strategy that does not fit the model (vgg16): every rank exits non-zero with a message
#      naming the model, and nothing is appended; the strategy on another cluster (local-4): the
#      same, the message naming 'made_for.cluster' and both clusters
#   5. autosync calibrate (2 ranks, up to 64 KiB) writes local-2-calibrated; optimize and run
#      (resnet50 at scale 0.1) take it with --cluster; on one rank it fails naming 'ranks'
# Run as: cmake -DAUTOSYNC=<autosync> -DMPIEXEC=<mpiexec> [-DNP_FLAG=-np] [-DPREFLAGS=...]
#               -DWORK=<scratch dir> -P run_cli.cmake
foreach(v AUTOSYNC MPIEXEC WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_cli.cmake: pass -D${v}=...")
  endif()
endforeach()
if(NOT NP_FLAG)
  set(NP_FLAG -np)
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(records "${WORK}/trials.jsonl")
set(mpirun ${MPIEXEC} --oversubscribe --allow-run-as-root ${NP_FLAG} 2 ${PREFLAGS})

# check("<what went wrong>" <if() condition ...>)
function(check what)
  if(NOT (${ARGN}))
    message(FATAL_ERROR "run_cli: ${what}")
  endif()
endfunction()

# 1. a strategy for resnet50 on local-2
execute_process(COMMAND "${AUTOSYNC}" optimize --model resnet50 --cluster local-2 --out "${WORK}/s.json"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "autosync optimize failed (${rc}):\n${out}\n${err}")
endif()

# 2. run it on two ranks
execute_process(COMMAND ${mpirun} "${AUTOSYNC}" run --strategy "${WORK}/s.json" --model resnet50 --iters 3 --warmup 1
                        --records "${records}"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "autosync run:\n${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun autosync run failed (${rc}):\n${out}\n${err}")
endif()
string(FIND "${out}" "every sum exact on every rank" at)
check("the run did not report exact sums" at GREATER -1)
string(FIND "${out}" "appended a record to" at)
check("the run did not report the record" at GREATER -1)

# 3. the record
check("no records file" EXISTS "${records}")
file(READ "${records}" text)
string(REGEX MATCHALL "\n" newlines "${text}")
list(LENGTH newlines n)
check("expected one line in ${records}, got ${n}" n EQUAL 1)
string(REGEX REPLACE "\n$" "" line "${text}")
string(JSON version ERROR_VARIABLE e GET "${line}" version)
check("the record does not parse as JSON: ${e}" NOT e)
check("version ${version}" version EQUAL 1)
string(JSON zoo GET "${line}" model zoo)
check("model.zoo = ${zoo}" zoo STREQUAL "resnet50")
string(JSON cname GET "${line}" cluster name)
check("cluster.name = ${cname}" cname STREQUAL "local-2")
string(JSON rpn GET "${line}" cluster ranks_per_node)
check("cluster.ranks_per_node = ${rpn}" rpn EQUAL 2)
string(JSON groups LENGTH "${line}" strategy groups)
check("strategy.groups is empty" groups GREATER 0)
string(JSON warmup GET "${line}" settings warmup)
check("settings.warmup = ${warmup}" warmup EQUAL 1)
string(JSON ranks GET "${line}" environment ranks)
check("environment.ranks = ${ranks}" ranks EQUAL 2)
string(JSON level GET "${line}" environment thread_level)
check("environment.thread_level = ${level}" level MATCHES "^MPI_THREAD_(MULTIPLE|SERIALIZED)$")
string(JSON mpilib GET "${line}" environment mpi_library)
check("environment.mpi_library is empty" mpilib MATCHES ".")
string(JSON stamp GET "${line}" environment timestamp)
check("timestamp ${stamp}" stamp MATCHES "^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z$")
string(JSON pred GET "${line}" predicted iteration_s)
check("predicted.iteration_s = ${pred}" pred GREATER 0)
string(JSON iters LENGTH "${line}" iterations)
check("expected 3 iterations, got ${iters}" iters EQUAL 3)
foreach(i RANGE 2)
  foreach(key sync_s exposed_s iteration_s)
    string(JSON per LENGTH "${line}" iterations ${i} ranks ${key})
    check("iterations[${i}].ranks.${key} has ${per} entries" per EQUAL 2)
    string(JSON top GET "${line}" iterations ${i} ${key})
    string(JSON r0 GET "${line}" iterations ${i} ranks ${key} 0)
    string(JSON r1 GET "${line}" iterations ${i} ranks ${key} 1)
    # the top-level figure is the maximum over the ranks (same text: the same double)
    check("iterations[${i}].${key} = ${top} is neither rank's value (${r0}, ${r1})" top STREQUAL r0 OR top STREQUAL r1)
  endforeach()
  string(JSON sync GET "${line}" iterations ${i} sync_s)
  check("iterations[${i}].sync_s = ${sync}" sync GREATER 0)
endforeach()

# 3b. the packing the run used is in its record when it is not the default
string(JSON pack ERROR_VARIABLE e GET "${line}" settings pack)
check("settings.pack is written for the default packing: ${pack}" e)
execute_process(COMMAND ${mpirun} "${AUTOSYNC}" run --strategy "${WORK}/s.json" --model resnet50 --scale 0.1 --iters 1 --warmup 0
                        --pack never --records "${WORK}/never.jsonl" --bucket-times "${WORK}/buckets.json"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("run --pack never failed (${rc}):\n${out}\n${err}" rc EQUAL 0)
file(READ "${WORK}/never.jsonl" nline)
string(JSON pack GET "${nline}" settings pack)
check("settings.pack = ${pack} after --pack never" pack STREQUAL "never")
# --bucket-times: one timed iteration, every rank's end of every plan bucket, a time > 0
file(READ "${WORK}/buckets.json" bt)
string(JSON nb LENGTH "${bt}" buckets)
check("no buckets in buckets.json" nb GREATER 0)
string(JSON nit LENGTH "${bt}" iterations)
check("buckets.json: ${nit} iterations, 1 timed" nit EQUAL 1)
string(JSON nr LENGTH "${bt}" iterations 0)
check("buckets.json: ${nr} ranks, 2 ran" nr EQUAL 2)
math(EXPR last "${nb} - 1")
foreach(r 0 1)
  string(JSON n LENGTH "${bt}" iterations 0 ${r})
  check("buckets.json: rank ${r} has ${n} buckets of ${nb}" n EQUAL nb)
  foreach(b RANGE ${last})
    string(JSON v GET "${bt}" iterations 0 ${r} ${b})
    check("buckets.json: rank ${r} bucket ${b} ended at '${v}'" v GREATER 0)
  endforeach()
endforeach()
# learn leaves it out and says so (it then has too few records to train on: exit 1 either way)
execute_process(COMMAND "${AUTOSYNC}" learn --records "${records}" "${WORK}/never.jsonl"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}" "left out 1 record(s) run with `--pack always|never`" at)
check("learn did not report the record it left out:\n${out}\n${err}" at GREATER -1)
string(FIND "${out}" "autosync learn: 1 records" at)
check("learn did not keep exactly the default record:\n${out}\n${err}" at GREATER -1)
execute_process(COMMAND "${AUTOSYNC}" run --strategy "${WORK}/s.json" --pack sometimes
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("run --pack sometimes was accepted" NOT rc EQUAL 0)
string(FIND "${out}${err}" "--pack" at)
check("the --pack error does not name the option:\n${out}\n${err}" at GREATER -1)

# 4. a strategy that does not fit the model: every rank fails, nothing is appended
execute_process(COMMAND ${mpirun} "${AUTOSYNC}" run --strategy "${WORK}/s.json" --model vgg16 --iters 1 --records "${records}"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("a strategy for resnet50 ran on vgg16" NOT rc EQUAL 0)
string(FIND "${out}${err}" "does not fit model 'vgg16'" at)
check("the mismatch error names the model:\n${out}\n${err}" at GREATER -1)
file(READ "${records}" after)
check("the failed run changed ${records}" after STREQUAL text)

# 4b. a strategy made for another cluster (s.json is stamped "made_for": local-2): every rank fails,
#     naming the field and both clusters, and nothing is appended
execute_process(COMMAND ${mpirun} "${AUTOSYNC}" run --strategy "${WORK}/s.json" --model resnet50 --cluster local-4 --iters 1
                        --records "${records}"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("a strategy made for local-2 ran on local-4" NOT rc EQUAL 0)
string(FIND "${out}${err}" "'made_for.cluster': strategy 'autosync' was made for cluster 'local-2'; this run's cluster is 'local-4'" at)
check("the made_for error names the field and both clusters:\n${out}\n${err}" at GREATER -1)
file(READ "${records}" after)
check("the failed run changed ${records}" after STREQUAL text)

# 5. autosync calibrate on the two ranks writes a cluster JSON that optimize and run take
execute_process(COMMAND ${mpirun} "${AUTOSYNC}" calibrate --out "${WORK}/local2.json" --max-bytes 65536 --budget-s 0.05
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "autosync calibrate:\n${out}")
check("autosync calibrate failed (${rc}):\n${out}\n${err}" rc EQUAL 0)
string(FIND "${out}" "fitted:  latency" at)
check("calibrate printed no fit" at GREATER -1)
file(READ "${WORK}/local2.json" cj)
string(JSON cname GET "${cj}" name)
check("calibrated cluster name ${cname}" cname STREQUAL "local-2-calibrated")
string(JSON bw GET "${cj}" nodes 0 intra bandwidth)
check("calibrated link bandwidth ${bw}" bw GREATER 0)
execute_process(COMMAND "${AUTOSYNC}" optimize --model resnet50 --cluster "${WORK}/local2.json" --out "${WORK}/s2.json"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("optimize on the calibrated cluster failed (${rc}):\n${out}\n${err}" rc EQUAL 0)
execute_process(COMMAND ${mpirun} "${AUTOSYNC}" run --strategy "${WORK}/s2.json" --model resnet50 --scale 0.1 --iters 1 --warmup 0
                        --cluster "${WORK}/local2.json"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("run on the calibrated cluster failed (${rc}):\n${out}\n${err}" rc EQUAL 0)
string(FIND "${out}" "predicted (cost model on local-2-calibrated)" at)
check("run did not predict on the calibrated cluster:\n${out}" at GREATER -1)
# under mpirun with one rank: an error naming the ranks, exit 1
execute_process(COMMAND ${MPIEXEC} --oversubscribe --allow-run-as-root ${NP_FLAG} 1 ${PREFLAGS} "${AUTOSYNC}" calibrate --out "${WORK}/one.json"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
check("calibrate on one rank succeeded" NOT rc EQUAL 0)
string(FIND "${out}${err}" "'ranks'" at)
check("calibrate on one rank does not name the ranks:\n${out}\n${err}" at GREATER -1)
message(STATUS "run_cli: ok")
