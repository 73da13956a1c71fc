# Bad option values: each is refused with a non-zero exit and a message naming the option (or
# the file's line), never wrapped, clamped, skipped or taken as a default. One line per case:
# the arguments, then the message expected (no square brackets in it: they would join list items).
# cmake -DAUTOSYNC=<autosync> -DSRC=<source dir> -DWORK=<dir> -P cli_bad_options.cmake
file(MAKE_DIRECTORY ${WORK})
set(trials ${SRC}/tests/data/trials/testbed-2x1-500mbit.jsonl)
set(a100 ${SRC}/tests/data/collectives/a100_1node_8gpu_allreduce.txt)
# a log whose first row failed nccl-tests' check, one with an absurd time, one that repeats a size
file(STRINGS ${a100} lines)
set(wrong "")
set(slow "")
set(twice "")
set(first TRUE)
foreach(l IN LISTS lines)
  if(first AND l MATCHES "^ +[0-9]")
    string(REGEX REPLACE "^( +[0-9]+ +[0-9]+ +[a-z]+ +[a-z]+ +-?[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+) +0 " "\\1      5 " w "${l}")
    string(REGEX REPLACE "^( +[0-9]+ +[0-9]+ +[a-z]+ +[a-z]+ +-?[0-9]+) +[0-9.]+ " "\\1    1e300 " s "${l}")
    string(APPEND wrong "${w}\n")
    string(APPEND slow "${s}\n")
    string(APPEND twice "${l}\n${l}\n")
    set(first FALSE)
  else()
    string(APPEND wrong "${l}\n")
    string(APPEND slow "${l}\n")
    string(APPEND twice "${l}\n")
  endif()
endforeach()
file(WRITE ${WORK}/wrong.txt "${wrong}")
file(WRITE ${WORK}/slow.txt "${slow}")
file(WRITE ${WORK}/twice.txt "${twice}")
file(WRITE ${WORK}/m.json [=[{"name": "m", "tensors": [{"name": "w", "shape": [1024]}]}]=])
file(WRITE ${WORK}/slowdev.json [=[{"name": "slow", "nodes": [{"name": "n", "count": 2, "devices": 1, "nic": {"bandwidth": "1Gb/s", "latency": "5us"}, "device_flops": 1e-300, "reduce_bandwidth": 1e10}]}]=])
file(WRITE ${WORK}/huge.json [=[{"name": "huge", "tensors": [{"name": "w", "shape": [1000000, 1000000]}]}]=])
file(WRITE ${WORK}/prof.json [=[{"name": "prof", "tensors": [{"name": "w", "shape": [1024], "ready_time": 0.001}], "measured_forward": 0.002, "measured_backward": 0.004}]=])
file(WRITE ${WORK}/prof_s.json [=[{"name": "s", "groups": [{"architecture": "all_reduce"}], "assignments": [{"tensor": "w", "group": 0}]}]=])
file(WRITE ${WORK}/far.json [=[{"name": "far", "nodes": [{"name": "n", "count": 2, "devices": 1, "nic": {"bandwidth": "1Gb/s", "latency": 1e300}, "device_flops": 1e12, "reduce_bandwidth": 1e10}]}]=])
set(cal "calibrate --nodes 1 --devices-per-node 8 --cluster dgx-a100-x2 --out ${WORK}/o.json --nccl-tests")
set(cases
  "optimize --seed -1|--seed: must be a whole number in .0, 18446744073709551615., got '-1'"
  "optimize --seed 18446744073709551616|--seed: must be a whole number in .0, 18446744073709551615."
  "optimize --budget -1|--budget: must be a whole number in .0, 1000000000."
  "sample --model gpt2 --cluster local-2 --out-dir ${WORK}/s --count 100000000|--count: must be a whole number in .0, 100000."
  "learn --records ${trials} --eta nan|--eta: must be a number in \\(0, 1."
  "learn --records ${trials} --eta -1|--eta: must be a number in \\(0, 1."
  "learn --records ${trials} --rounds 0|--rounds: must be a whole number in .1, 100000."
  "learn --records ${trials} --depth -1|--depth: must be a whole number in .1, 20."
  "learn --records ${trials} ${trials}|'--records': '.*' is given twice"
  "learn --records ${trials} --name class --emit-header ${WORK}/h.hpp|'--name': must be a C\\+\\+ name"
  "learn --records ${WORK}|is a directory, not a file"
  "optimize --model ${WORK} --cluster local-2|is a directory, not a file"
  "optimize --model ${WORK}/m.json --cluster ${WORK}/far.json|'nodes.0..nic.latency': must be seconds in .0, 1."
  "collective --cluster dgx-a100-x2 --bytes 1,,2|'--bytes.1.': is empty"
  "collective --cluster dgx-a100-x2 --bytes -0|'--bytes.0.': must be a whole number of bytes"
  "${cal} ${a100} --sizes 1048576,1048576|'--sizes.1.': 1048576 bytes is already --sizes.0."
  "${cal} ${a100} --op all_gather|'--op': 'all_gather' does not reduce, but the log's rows have redop 'sum'"
  "${cal} ${WORK}/twice.txt|'--nccl-tests': '.*' times [0-9]+ bytes twice"
  "${cal} ${WORK}/wrong.txt|'line [0-9]+': #wrong is 5: nccl-tests found wrong results"
  "${cal} ${WORK}/slow.txt|'line [0-9]+': a time of 1e300 us is 1000 s or more"
  "tune --records ${WORK}/t.jsonl --np 100000 --cluster local-2|'--np': 100000 ranks do not fit cluster 'local-2' of 2 devices"
  "tune --records ${WORK}/t.jsonl --iters -1|--iters: must be a whole number in .1, 1000000."
  "tune --records ${WORK}/t.jsonl --model gpt2 --cluster local-2 --budget 8 --runner replay:${trials}|'--runner': no trial ran"
  "tune --records ${WORK}/t.jsonl --runner replay:|'--runner': 'replay:' needs its argument"
  "tune --records ${WORK}/t.jsonl --out ${WORK}/no/such/dir/x.json|'--out': cannot open"
  "optimize --model gpt2 --cluster ${WORK}/slowdev.json|'nodes.0..device_flops': must be FLOP/s in .1e3, 1e20."
  "optimize --model ${WORK}/huge.json --cluster local-2|'tensors.0..shape': 1000000000000 elements: a tensor may have at most 2.36"
  "optimize --model gpt2 --cluster local-2 --allow-lossy --compressors int8,,fp16|'--compressors.1.': is empty"
  "collective --cluster dgx-a100-x2 --op all_gather --algorithm tree --bytes 1024|'--algorithm': NCCL has no 'tree' algorithm for all_gather"
  "collective --cluster dgx-a100-x2 --bytes 0x10|'--bytes.0.': must be a whole number of bytes"
  "sample --model gpt2 --cluster local-2 --out-dir ${WORK}/s0 --count 0|'--count': is 0 and neither --baselines nor --search is given"
  "learn --records ${trials} --name std --emit-header ${WORK}/h.hpp|'--name': 'std' would collide"
  "learn --records ${trials} --out ${WORK}|'--out': '.*' is a directory"
  "learn --records ${trials} --folds 3|--records excludes --folds"
  "learn --records ${trials} --out ${WORK}/m.json --emit-header ${WORK}/m.json|'--emit-header': '.*' is also the --out file"
  "optimize --model gpt2 --cluster dgx-h100-x2 --compute-scale 1 --precision fp32|'--precision': cannot be combined with --compute-scale"
  "explain --model ${WORK}/prof.json --cluster local-2 --precision bf16 ${WORK}/prof_s.json|'--precision': model 'prof' has a measured profile"
  "learn --collectives ${SRC}/tests/data/collectives/nccl_cases.json --holdout 0.2|--collectives excludes --holdout"
  "${cal} ${a100} --sizes 1048576,,2097152|'--sizes.1.': is empty"
  "calibrate --nccl-tests ${a100} --nodes +1 --devices-per-node 8 --out ${WORK}/o.json|--nodes: must be a whole number in .1, 65536.")
foreach(c IN LISTS cases)
  string(FIND "${c}" "|" bar)
  string(SUBSTRING "${c}" 0 ${bar} args)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${c}" ${from} -1 expect)
  separate_arguments(argv UNIX_COMMAND "${args}")
  execute_process(COMMAND ${AUTOSYNC} ${argv} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "${expect}")
    message(FATAL_ERROR "autosync ${args}: exit ${rc}, expected /${expect}/, got '${out}${err}'")
  endif()
endforeach()
