# `autosync optimize --precision`: bf16 predicts a shorter iteration than PyTorch's default
# fp32 for resnet50 on one DGX H100 (the compute model runs convolutions on bf16 tensor cores and
# moves half the activation bytes), and an unknown precision is a usage error naming the option.
# cmake -DAUTOSYNC=<autosync> -P cli_precision.cmake
foreach(p pytorch-fp32 bf16)
  execute_process(COMMAND ${AUTOSYNC} optimize --model resnet50 --cluster dgx-h100-x1 --precision ${p} --json --budget 200
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--precision ${p}: exit ${rc}: ${err}")
  endif()
  string(JSON t_${p} GET "${out}" predicted_iteration_s)
endforeach()
# the compute model's figures for these rows (tests/bench/compute_table.cpp): about 19.6 ms and 12.3 ms
if(NOT t_bf16 LESS t_pytorch-fp32)
  message(FATAL_ERROR "bf16 (${t_bf16} s) is not faster than pytorch-fp32 (${t_pytorch-fp32} s)")
endif()
if(t_pytorch-fp32 LESS 0.015 OR t_pytorch-fp32 GREATER 0.025 OR t_bf16 LESS 0.009 OR t_bf16 GREATER 0.016)
  message(FATAL_ERROR "iterations ${t_pytorch-fp32} s / ${t_bf16} s outside [15, 25] ms / [9, 16] ms")
endif()
execute_process(COMMAND ${AUTOSYNC} optimize --model resnet50 --precision fp8
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT "${out}${err}" MATCHES "--precision: fp8 not in")
  message(FATAL_ERROR "--precision fp8: exit ${rc}, '${out}${err}'")
endif()
