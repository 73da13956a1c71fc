# ctest registry.emit: the header emit_header writes for a strategy using the registered
# compressor and slot, compiled (with ext.hpp on the include path) and run: it must name the
# registered policy types and rebuild the strategy. Arguments: GENERATOR, CXX, SRC, INC, WORK.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${GENERATOR} --emit ${WORK}/emitted_registry.hpp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "autosync_registry_unit --emit failed (${rc})")
endif()
execute_process(
  COMMAND ${CXX} -std=c++20 -Wall -Wextra -Werror -I${INC} -I${SRC} -I${WORK} ${SRC}/check.cpp -o ${WORK}/check
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(READ ${WORK}/emitted_registry.hpp header)
  message(FATAL_ERROR "the emitted header does not compile:\n${out}${err}\n--- emitted_registry.hpp ---\n${header}")
endif()
execute_process(COMMAND ${WORK}/check RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the emitted header does not rebuild the strategy (${rc})")
endif()
