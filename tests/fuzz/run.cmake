# Runs one fuzzer for a bounded time on a fresh copy of its seed corpus (the seeds in the
# source tree are never modified). Fails when the fuzzer finds a crash, leak, timeout or OOM;
# the reproducer is left in WORK/.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
file(GLOB _seeds ${SEEDS}/*)
file(COPY ${_seeds} DESTINATION ${WORK}/corpus)
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -rss_limit_mb=2048 -timeout=10 -dict=${DICT}
          -artifact_prefix=${WORK}/ -print_final_stats=1 ${WORK}/corpus
  WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); reproducer under ${WORK}/")
endif()
