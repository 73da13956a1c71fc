# `autosync explain`: a strategy stamped (made_for) for another cluster is an error naming the
# field, or with --other-cluster costed with a note; a fingerprint that is not the search's form
# is an error naming it; a cluster of 1000 alike nodes is explained (its ring's cut from one
# max-flow per pair of node shapes, the label abbreviated).
# cmake -DAUTOSYNC=<autosync> -DWORK=<dir> -P cli_explain.cmake
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${AUTOSYNC} optimize --model gpt2 --cluster dgx-h100-x2 --budget 200 --out ${WORK}/s.json
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "optimize: exit ${rc}: ${err}")
endif()
execute_process(COMMAND ${AUTOSYNC} explain ${WORK}/s.json --model gpt2 --cluster dgx-h100-x2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "explain on its own cluster: exit ${rc}: ${err}")
endif()
execute_process(COMMAND ${AUTOSYNC} explain ${WORK}/s.json --model gpt2 --cluster dgx-h100-x16
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "'made_for.cluster': strategy '.*' was made for cluster 'dgx-h100-x2'.*--other-cluster")
  message(FATAL_ERROR "explain on another cluster: exit ${rc}, '${out}${err}'")
endif()
execute_process(COMMAND ${AUTOSYNC} explain ${WORK}/s.json --model gpt2 --cluster dgx-h100-x16 --other-cluster
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "note: 'made_for.cluster'" OR NOT out MATCHES "predicted iteration")
  message(FATAL_ERROR "explain --other-cluster: exit ${rc}, '${out}${err}'")
endif()
file(READ ${WORK}/s.json strategy)
string(REGEX REPLACE "\"fingerprint\": *\"[^\"]*\"" "\"fingerprint\": \"\"" blank "${strategy}")
file(WRITE ${WORK}/blank.json "${blank}")
execute_process(COMMAND ${AUTOSYNC} explain ${WORK}/blank.json --model gpt2 --cluster dgx-h100-x2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "'made_for.fingerprint': must be")
  message(FATAL_ERROR "an empty fingerprint: exit ${rc}, '${out}${err}'")
endif()
file(WRITE ${WORK}/m.json [=[{"name": "m", "tensors": [{"name": "w", "shape": [1024]}]}]=])
file(WRITE ${WORK}/one.json [=[{"name": "one", "groups": [{"architecture": "all_reduce"}], "assignments": [{"tensor": "w", "group": 0}]}]=])
file(WRITE ${WORK}/big.json [=[{"name": "big", "nodes": [{"name": "n", "count": 1000, "devices": 1, "nic": {"bandwidth": "100Gb/s", "latency": "5us"}, "device_flops": 1e14, "reduce_bandwidth": 3e11}]}]=])
execute_process(COMMAND ${AUTOSYNC} explain ${WORK}/one.json --model ${WORK}/m.json --cluster ${WORK}/big.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT out MATCHES "ring over worker nodes n-0 > n-1 > n-2 > n-3 > n-4 > n-5 > ... \\(993 more\\) > n-999 +cut +12.500 GB/s")
  message(FATAL_ERROR "explain on 1000 nodes: exit ${rc}, '${out}${err}'")
endif()
