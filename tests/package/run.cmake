# Installs autosync from SRC into WORK/prefix, then builds and runs the consumer project twice:
# once through find_package(autosync CONFIG) against the installed tree, once through
# add_subdirectory on the source tree. Run by ctest (test "package"); with -DMPIEXEC=<mpiexec> the
# consumer runs under it on 2 ranks.
file(REMOVE_RECURSE ${WORK})
set(gen -G "${GENERATOR}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
run(${CMAKE_COMMAND} ${gen} -S ${SRC} -B ${WORK}/lib -DCMAKE_CXX_COMPILER=${CXX} -DAUTOSYNC_BUILD_TESTS=OFF
    -DAUTOSYNC_BUILD_EXAMPLES=OFF -DAUTOSYNC_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
run(${CMAKE_COMMAND} --install ${WORK}/lib)
foreach(mode installed subdirectory)
  run(${CMAKE_COMMAND} ${gen} -S ${SRC}/tests/package -B ${WORK}/${mode} -DCMAKE_CXX_COMPILER=${CXX}
      -DCMAKE_PREFIX_PATH=${WORK}/prefix -DAUTOSYNC_CONSUME=${mode} -DAUTOSYNC_SOURCE=${SRC})
  run(${CMAKE_COMMAND} --build ${WORK}/${mode})
  if(MPIEXEC)  # with MPI the consumer runs a session on 2 ranks (without, two copies of the plain checks)
    run(${MPIEXEC} --oversubscribe --allow-run-as-root -np 2 ${WORK}/${mode}/consumer)
  else()
    run(${WORK}/${mode}/consumer)
  endif()
  message(STATUS "consumer (${mode}) built and ran")
endforeach()
