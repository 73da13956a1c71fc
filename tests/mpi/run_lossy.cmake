# `autosync run` with the registered lossy compressors (ctest mpi.run_lossy.np3, label mpi):
#   1. autosync optimize --model resnet50 --cluster local-3 --out s.json (a lossless strategy)
#   2. for each compressor (int8, qsgd, nuqsgd, alq and amq refitting from iteration 1, topk
#      10 %, randomk 30 %, powersgd rank 2 from
#      iteration 3, and Accordion over top-k, PowerSGD and int8 deciding every iteration): the
#      strategy's group gets it; mpirun -np 3 autosync run --model resnet50
#      --scale 0.02 --iters 2 exits 0 and prints "ok" for the compressor's guarantee
#   3. a compressor with a bad parameter ({"kind": "topk", "density": 2}): every rank exits
#      non-zero with a message naming 'density'
# Run as: cmake -DAUTOSYNC=<autosync> -DMPIEXEC=<mpiexec> [-DNP_FLAG=-np] [-DPREFLAGS=...]
#               -DWORK=<scratch dir> -P run_lossy.cmake
foreach(v AUTOSYNC MPIEXEC WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_lossy.cmake: pass -D${v}=...")
  endif()
endforeach()
if(NOT NP_FLAG)
  set(NP_FLAG -np)
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(mpirun ${MPIEXEC} --oversubscribe --allow-run-as-root ${NP_FLAG} 3 ${PREFLAGS})

execute_process(COMMAND "${AUTOSYNC}" optimize --model resnet50 --cluster local-3 --out "${WORK}/s.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "autosync optimize failed (${rc}):\n${out}\n${err}")
endif()
file(READ "${WORK}/s.json" base)
string(FIND "${base}" "\"compression\": \"none\"" at)
if(at LESS 0)
  message(FATAL_ERROR "run_lossy: the optimized strategy has no \"compression\": \"none\" to replace:\n${base}")
endif()

set(cases
  "int8|\"int8\""
  "qsgd|\"qsgd\""
  "nuqsgd|{\"kind\": \"nuqsgd\", \"levels\": 3}"
  "alq|{\"kind\": \"alq\", \"refit\": 1}"
  "amq|{\"kind\": \"amq\", \"levels\": 3, \"refit\": 1}"
  "topk|{\"kind\": \"topk\", \"density\": 0.1}"
  "randomk|{\"kind\": \"randomk\", \"density\": 0.3}"
  "powersgd|{\"kind\": \"powersgd\", \"rank\": 2, \"start_iteration\": 3}"
  "accordion_topk|{\"kind\": \"accordion_topk\", \"interval\": 1}"
  "accordion_powersgd|{\"kind\": \"accordion_powersgd\", \"interval\": 1}"
  "accordion_int8|{\"kind\": \"accordion_int8\", \"interval\": 1}")
foreach(c IN LISTS cases)
  string(REPLACE "|" ";" c "${c}")
  list(GET c 0 name)
  list(GET c 1 value)
  string(REPLACE "\"compression\": \"none\"" "\"compression\": ${value}" s "${base}")
  file(WRITE "${WORK}/s_${name}.json" "${s}")
  execute_process(COMMAND ${mpirun} "${AUTOSYNC}" run --strategy "${WORK}/s_${name}.json" --model resnet50 --scale 0.02 --iters 2 --warmup 0
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run_lossy: ${name}: autosync run failed (${rc}):\n${out}\n${err}")
  endif()
  if(NOT out MATCHES "ok   ${name} \\(")
    message(FATAL_ERROR "run_lossy: ${name}: no guarantee line for it:\n${out}")
  endif()
endforeach()

string(REPLACE "\"compression\": \"none\"" "\"compression\": {\"kind\": \"topk\", \"density\": 2}" s "${base}")
file(WRITE "${WORK}/s_bad.json" "${s}")
execute_process(COMMAND ${mpirun} "${AUTOSYNC}" run --strategy "${WORK}/s_bad.json" --model resnet50 --scale 0.02 --iters 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "density")
  message(FATAL_ERROR "run_lossy: a topk density of 2 was not refused naming 'density' (${rc}):\n${out}\n${err}")
endif()
