# `autosync optimize --compute-scale X`: compute as `autosync run --compute-scale X` simulates it
# (forward_flops and each tensor's backward_flops / device_flops x X), also for a model with layers
# on a described device (GPT-2 on dgx-h100-x2), whose own compute is its layers' roofline (about
# 112 ms in fp32) where run sleeps its FLOPs at the preset's device_flops (about 8 ms): 0 is no
# compute at all, 2 more than 1, and without the option the model's own compute. A negative scale,
# and --recompute beside it (run does not simulate layers), are errors naming the option.
# cmake -DAUTOSYNC=<autosync> -DWORK=<dir> -P cli_compute_scale.cmake
foreach(x none 0 1 2)
  set(extra "")
  if(NOT x STREQUAL "none")
    set(extra --compute-scale ${x})
  endif()
  execute_process(COMMAND ${AUTOSYNC} optimize --model gpt2 --cluster dgx-h100-x2 --json --budget 200 ${extra}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--compute-scale ${x}: exit ${rc}: ${err}")
  endif()
  string(JSON it_${x} GET "${out}" predicted_iteration_s)
  string(JSON exposed_${x} GET "${out}" predicted_exposed_s)
endforeach()
if(NOT it_0 EQUAL exposed_0)  # no compute: the iteration is its exposed communication alone
  message(FATAL_ERROR "--compute-scale 0: iteration ${it_0} s, of which exposed ${exposed_0} s: compute left")
endif()
if(NOT it_1 GREATER it_0 OR NOT it_2 GREATER it_1)
  message(FATAL_ERROR "iterations at 0, 1, 2: ${it_0}, ${it_1}, ${it_2} s: not increasing")
endif()
if(it_1 LESS 0.005 OR it_1 GREATER 0.012 OR it_none LESS 0.09)
  message(FATAL_ERROR "gpt2 fp32 on dgx-h100-x2: ${it_1} s at --compute-scale 1 (FLOPs at device_flops: 5-12 ms), "
                      "${it_none} s without it (the layers' roofline: over 90 ms)")
endif()
foreach(bad "--compute-scale;-1" "--compute-scale;1;--recompute;h.")
  execute_process(COMMAND ${AUTOSYNC} optimize --model gpt2 --cluster dgx-h100-x2 ${bad}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT "${err}" MATCHES "'--(compute-scale|recompute)': ")
    message(FATAL_ERROR "${bad}: exit ${rc}, '${out}${err}'")
  endif()
endforeach()
