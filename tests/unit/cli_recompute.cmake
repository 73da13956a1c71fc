# `autosync optimize --recompute`: activation checkpointing of GPT-2's blocks ("h.") runs their
# forward again in backward, which raises the compute-bound lower bound by about the blocks' forward
# (bf16 on one DGX H100: 48.6 ms without, 64.0 ms with, by the compute model); a prefix that names
# no layer, and a model without layers, are errors that name the option.
# cmake -DAUTOSYNC=<autosync> -DWORK=<dir> -P cli_recompute.cmake
foreach(run plain blocks)
  set(extra "")
  if(run STREQUAL "blocks")
    set(extra --recompute h.)
  endif()
  execute_process(COMMAND ${AUTOSYNC} optimize --model gpt2 --cluster dgx-h100-x1 --precision bf16 --json --budget 200 ${extra}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${run}: exit ${rc}: ${err}")
  endif()
  string(JSON lb_${run} GET "${out}" lower_bound_s)
endforeach()
if(NOT lb_blocks GREATER lb_plain)
  message(FATAL_ERROR "--recompute h.: lower bound ${lb_blocks} s, not above ${lb_plain} s without it")
endif()
if(lb_plain LESS 0.044 OR lb_plain GREATER 0.054 OR lb_blocks LESS 0.058 OR lb_blocks GREATER 0.070)
  message(FATAL_ERROR "lower bounds ${lb_plain} s / ${lb_blocks} s outside [44, 54] ms / [58, 70] ms")
endif()
execute_process(COMMAND ${AUTOSYNC} optimize --model gpt2 --cluster dgx-h100-x1 --recompute h.,encoder.layer.
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "'--recompute': no layer of model 'gpt2' starts with 'encoder.layer.'")
  message(FATAL_ERROR "--recompute encoder.layer. on gpt2: exit ${rc}, '${out}${err}'")
endif()
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/flat.json [=[{"name": "flat", "tensors": [{"name": "w", "shape": [1024]}], "forward_flops": 1e9}]=])
execute_process(COMMAND ${AUTOSYNC} optimize --model ${WORK}/flat.json --cluster dgx-h100-x1 --recompute w
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "'--recompute': model 'flat' has no layers to recompute")
  message(FATAL_ERROR "--recompute on a model without layers: exit ${rc}, '${out}${err}'")
endif()
