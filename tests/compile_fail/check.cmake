# Compiles SRC and passes only if the compiler fails with EXPECT in its output, and with at most
# MAX_ERRORS lines that say "error" when the source gives "// max-errors: N" (one static_assert,
# not a cascade).
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INC} ${SRC}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must fail with: ${EXPECT}")
endif()
string(FIND "${out}${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "${SRC} failed without the expected text '${EXPECT}':\n${err}")
endif()
if(DEFINED MAX_ERRORS AND NOT MAX_ERRORS STREQUAL "")
  string(REGEX MATCHALL "error:" _errs "${out}${err}")
  list(LENGTH _errs _n)
  if(_n GREATER MAX_ERRORS)
    message(FATAL_ERROR "${SRC} failed with ${_n} errors, at most ${MAX_ERRORS} expected:\n${err}")
  endif()
endif()
message(STATUS "failed as expected: ${EXPECT}")
