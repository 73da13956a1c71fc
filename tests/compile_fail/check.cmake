# Compiles SRC and passes only if the compiler fails with EXPECT in its output.
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INC} ${SRC}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must fail with: ${EXPECT}")
endif()
string(FIND "${out}${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "${SRC} failed without the expected text '${EXPECT}':\n${err}")
endif()
message(STATUS "failed as expected: ${EXPECT}")
