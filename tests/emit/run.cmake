# ctest emit_roundtrip: generate a header from the sample strategy, compile a TU that includes
# it with the project's C++ compiler, run it. Arguments: GENERATOR (the emit_generate program),
# CXX, SRC (tests/emit), INC (include/), WORK (a scratch folder in the build tree).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${GENERATOR} ${WORK}/emitted_strategy.hpp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "emit_generate failed (${rc})")
endif()
execute_process(
  COMMAND ${CXX} -std=c++20 -Wall -Wextra -Werror -I${INC} -I${SRC} -I${WORK} ${SRC}/check.cpp -o ${WORK}/check
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(READ ${WORK}/emitted_strategy.hpp header)
  message(FATAL_ERROR "the emitted header does not compile:\n${out}${err}\n--- emitted_strategy.hpp ---\n${header}")
endif()
execute_process(COMMAND ${WORK}/check RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the emitted header does not rebuild the strategy (${rc})")
endif()
