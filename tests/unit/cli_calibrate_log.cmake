# `autosync calibrate --nccl-tests` and `autosync collective`, as the README shows them:
#   1. a public log (2 x 8 H100, GPUDirect-TCPXO) fitted from four of its sizes to the machine's
#      data sheet writes a cluster whose predictions (`collective`) lie within 15 % of the log at
#      every size the fit used, and within the documented median bound (15 %) over all 31 sizes;
#   2. `collective --json` is valid JSON with one object per size;
#   3. a JSON report of nccl-tests (-J) calibrates without --nodes and --devices-per-node (its
#      devices say 2 hosts of 8 ranks) to the same constants as its text twin; --transport auto
#      on the default (RDMA) data sheet finds the log's GPUDirect-TCPXO network;
#   4. bad input is an error naming the option or the log's line, with a non-zero exit.
# cmake -DAUTOSYNC=<autosync> -DSRC=<source dir> -DWORK=<scratch dir> -P cli_calibrate_log.cmake
cmake_policy(SET CMP0007 NEW)
file(MAKE_DIRECTORY "${WORK}")
set(log "${SRC}/tests/data/collectives/h100_2node_16gpu_tcpxo_allreduce.txt")
set(sizes 1024,1048576,67108864,4294967296)
# the machine's data sheet (GCP a3-megagpu-8g: 8 x 200 Gb/s GPUDirect-TCPXO NICs, NVLink 450 GB/s),
# as the low-shot manifest states it: calibration scales its links together, so their ratio must be the machine's
file(READ "${SRC}/tests/data/collectives/nccl_cases.json" manifest)
string(JSON sheet GET "${manifest}" clusters a3megax2)
file(WRITE "${WORK}/a3mega.json" "${sheet}")

function(run_ok what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
function(run_fails what pattern)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: expected a failure matching '${pattern}', got exit ${rc}\n${out}\n${err}")
  endif()
endfunction()

# 1. the text log, four sizes
run_ok("calibrate --nccl-tests" ${AUTOSYNC} calibrate --nccl-tests "${log}" --nodes 2 --devices-per-node 8 --cluster "${WORK}/a3mega.json"
       --sizes ${sizes} --out "${WORK}/tcpxo.json")
set(text_out "${out}")
string(REGEX MATCH "calibrated ([0-9.]+)" m "${out}")
if(NOT m)
  message(FATAL_ERROR "calibrate printed no median error:\n${out}")
endif()
set(median "${CMAKE_MATCH_1}")
if(median GREATER 0.15)
  message(FATAL_ERROR "median relative error ${median} over the log's sizes exceeds 0.15:\n${out}")
endif()
# the log's measured times of the fitted sizes (out-of-place, µs)
file(STRINGS "${log}" rows REGEX "^ +[0-9]")
run_ok("collective" ${AUTOSYNC} collective --cluster "${WORK}/tcpxo.json" --op all_reduce --bytes ${sizes})
string(REPLACE "\n" ";" lines "${out}")
list(FILTER lines EXCLUDE REGEX "^$")
list(LENGTH lines n)
if(NOT n EQUAL 4)
  message(FATAL_ERROR "collective printed ${n} lines for 4 sizes:\n${out}")
endif()
foreach(line IN LISTS lines)
  string(REGEX MATCH "^([0-9]+) ([0-9.]+)$" m "${line}")
  if(NOT m)
    message(FATAL_ERROR "collective line '${line}' is not 'bytes us'")
  endif()
  set(bytes "${CMAKE_MATCH_1}")
  set(us "${CMAKE_MATCH_2}")
  set(measured "")
  foreach(r IN LISTS rows)
    string(REGEX MATCH "^ +([0-9]+) +[0-9]+ +[a-z0-9]+ +[a-z]+ +-?[0-9]+ +([0-9.]+)" rm "${r}")
    if(rm AND CMAKE_MATCH_1 STREQUAL bytes)
      set(measured "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  if(measured STREQUAL "")
    message(FATAL_ERROR "no row of ${bytes} bytes in the log")
  endif()
  # |predicted - measured| <= 0.15 x measured (whole microseconds, 2 us of slack for the truncation)
  string(REGEX REPLACE "\\..*" "" us_i "${us}")
  string(REGEX REPLACE "\\..*" "" me_i "${measured}")
  math(EXPR diff "${us_i} - ${me_i}")
  if(diff LESS 0)
    math(EXPR diff "0 - ${diff}")
  endif()
  math(EXPR bound "${me_i} * 15 / 100 + 2")
  if(diff GREATER bound)
    message(FATAL_ERROR "${bytes} bytes: predicted ${us} us against the log's ${measured} us (more than 15 % apart)")
  endif()
endforeach()

# 2. --json
run_ok("collective --json" ${AUTOSYNC} collective --cluster "${WORK}/tcpxo.json" --op all_reduce --bytes 8,1048576 --json)
string(JSON nsizes LENGTH "${out}" sizes)
string(JSON b1 GET "${out}" sizes 1 bytes)
string(JSON us1 GET "${out}" sizes 1 us)
if(NOT nsizes EQUAL 2 OR NOT b1 EQUAL 1048576 OR NOT us1 GREATER 0)
  message(FATAL_ERROR "collective --json: ${out}")
endif()

# 3. the same rows as a JSON report (-J) of 2 hosts x 8 ranks: no --nodes, no --devices-per-node
set(results "")
foreach(r IN LISTS rows)
  string(STRIP "${r}" r)
  string(REGEX REPLACE " +" ";" f "${r}")  # size count type redop root time algbw busbw #wrong time algbw busbw #wrong
  list(LENGTH f nf)
  if(NOT nf EQUAL 13)
    message(FATAL_ERROR "unexpected row '${r}'")
  endif()
  foreach(i RANGE 12)
    list(GET f ${i} c${i})
  endforeach()
  if(NOT results STREQUAL "")
    string(APPEND results ",\n")
  endif()
  string(APPEND results "{\"size\": ${c0}, \"count\": ${c1}, \"type\": \"${c2}\", \"redop\": \"${c3}\", \"root\": \"    ${c4}\", "
         "\"out_of_place\": {\"time\": ${c5}, \"alg_bw\": ${c6}, \"bus_bw\": ${c7}, \"nwrong\": 0}, "
         "\"in_place\": {\"time\": ${c9}, \"alg_bw\": ${c10}, \"bus_bw\": ${c11}, \"nwrong\": null}}")
endforeach()
set(devices "")
foreach(rank RANGE 15)
  math(EXPR host "${rank} / 8")
  if(NOT devices STREQUAL "")
    string(APPEND devices ", ")
  endif()
  string(APPEND devices "{\"rank\": ${rank}, \"hostname\": \"a3mega-${host}\", \"device_info\": \"NVIDIA H100 80GB HBM3\"}")
endforeach()
file(WRITE "${WORK}/report.json" "{\"version\": 3, \"nccl_version\": 22807,\n\"config\": {\"nthreads\": 1, \"ngpus\": 1, \"devices\": [${devices}]},\n\"results\": [\n${results}\n]}\n")
run_ok("calibrate --nccl-tests report.json" ${AUTOSYNC} calibrate --nccl-tests "${WORK}/report.json" --cluster "${WORK}/a3mega.json" --sizes ${sizes}
       --out "${WORK}/tcpxo_report.json")
if(NOT out MATCHES "--nodes 2 --devices-per-node 8")
  message(FATAL_ERROR "calibrate did not take the report's shape:\n${out}")
endif()
string(REGEX MATCH "fitted [0-9] constant[^\n]*" fit_text "${text_out}")
string(REGEX MATCH "fitted [0-9] constant[^\n]*" fit_report "${out}")
if(NOT fit_text STREQUAL fit_report)
  message(FATAL_ERROR "the report's fit differs from its text twin's:\n  ${fit_text}\n  ${fit_report}")
endif()

# --transport auto on the default data sheet (dgx-h100-x1's RDMA node) finds the TCPXO network
run_ok("calibrate --transport auto" ${AUTOSYNC} calibrate --nccl-tests "${log}" --nodes 2 --devices-per-node 8 --transport auto --points 4
       --out "${WORK}/auto.json")
if(NOT out MATCHES "gpudirect_tcp \\(the best fit of every transport\\)")
  message(FATAL_ERROR "--transport auto did not pick GPUDirect-TCPXO:\n${out}")
endif()

# 4. bad input
run_fails("an unknown transport" "--transport.*unknown transport 'ib'.*auto" ${AUTOSYNC} calibrate --nccl-tests "${log}" --nodes 2
          --devices-per-node 8 --transport ib --out "${WORK}/x.json")
run_fails("a text log without --nodes" "--nodes.*required" ${AUTOSYNC} calibrate --nccl-tests "${log}" --devices-per-node 8 --out "${WORK}/x.json")
run_fails("a size the log lacks" "--sizes\\[0\\].*no row of 1000 bytes" ${AUTOSYNC} calibrate --nccl-tests "${log}" --nodes 2 --devices-per-node 8
          --sizes 1000 --out "${WORK}/x.json")
file(WRITE "${WORK}/bad.txt" "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n  1024 256 float sum -1 12.5 0.08 0.14 0 oops 0.08 0.14 0\n")
run_fails("a malformed row" "line 2.*column 10" ${AUTOSYNC} calibrate --nccl-tests "${WORK}/bad.txt" --nodes 2 --devices-per-node 8 --out "${WORK}/x.json")
file(WRITE "${WORK}/bad.json" "{\"results\": [{\"size\": 8, \"count\": 2,\n \"out_of_place\": {\"time\": \"fast\", \"alg_bw\": 0, \"bus_bw\": 0}}]}\n")
run_fails("a malformed report" "bad.json:2: 'results\\[0\\].out_of_place.time'" ${AUTOSYNC} calibrate --nccl-tests "${WORK}/bad.json" --nodes 2
          --devices-per-node 8 --out "${WORK}/x.json")
run_fails("collective without sizes" "--bytes" ${AUTOSYNC} collective --cluster "${WORK}/tcpxo.json")
run_fails("collective with a negative size" "--bytes\\[1\\]" ${AUTOSYNC} collective --cluster "${WORK}/tcpxo.json" --bytes 8,-1)
