#!/usr/bin/env bash
# tests/cuda/run-gpu-checks.sh <build-dir> — every GPU check of autosync in one command, on a
# machine with NVIDIA GPUs, CUDA, NCCL and MPI. The build directory must have been configured
# with nvcc found (the `default` or `ci` preset does). Steps (each prints PASS or FAIL; the
# script exits non-zero when one failed):
#   1. build the GPU targets
#   2. the bucket kernels against the CPU reference (cuda.kernels_gpu) and the codec kernels
#      against the CPU codecs (cuda.codecs_gpu) — must run, not skip
#   3. the NCCL backend, topologies and executor on one rank (every plan step kind), then on
#      every GPU of the machine (mpirun -np <GPUs>) when there are several
#   4. compute-sanitizer memcheck / racecheck / initcheck / synccheck on the kernels; memcheck
#      on the NCCL executor with --report-api-errors no (see the step)
#   5. the tuner plugin loaded by real NCCL (NCCL_TUNER_PLUGIN, NCCL_DEBUG=INFO,
#      NCCL_DEBUG_SUBSYS=TUNING): the log must show autosync's init line and, with two or more
#      GPUs, its choices ("autosync tuner: AllReduce ... -> RING/..." or TREE); with a bad
#      AUTOSYNC_TUNER_CLUSTER the job must still succeed, the log showing the plugin's WARN
#   6. the trainer example on every GPU (the loss must fall)
#   7. the kernel bandwidth / pipeline benchmark (figures with their cudaMemcpy anchors)
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 <build-dir>" >&2
  exit 2
fi
B=$(cd "$1" && pwd)
LOGS=$(mktemp -d)
failed=0
step() { echo; echo "=== $*"; }
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failed=1; }

MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${GPUS:-0}" -lt 1 ]; then
  echo "no GPU found (nvidia-smi -L lists none): these checks need one" >&2
  exit 2
fi
echo "GPUs: $GPUS; logs in $LOGS"

step "1. build"
if cmake --build "$B" --target autosync_cuda_kernel_logic autosync_cuda_kernels_gpu autosync_cuda_codecs_gpu autosync_cuda_nccl_executor autosync_cuda_nccl_collectives \
     autosync_tuner_harness nccl-tuner-autosync bench_cuda_kernels example_11_nccl_trainer; then
  pass build
else
  fail build
  exit 1
fi
EXE_KL=$B/tests/cuda/autosync_cuda_kernel_logic
EXE_KG=$B/tests/cuda/autosync_cuda_kernels_gpu
EXE_CG=$B/tests/cuda/autosync_cuda_codecs_gpu
EXE_NE=$B/tests/cuda/autosync_cuda_nccl_executor
EXE_NC=$B/tests/cuda/autosync_cuda_nccl_collectives
PLUGIN=$B/lib/libnccl-tuner-autosync.so
BENCH=$B/tests/bench/bench_cuda_kernels
TRAINER=$B/examples/example_11_nccl_trainer

run() {  # run <name> <command...>: PASS only on exit 0 (77 = skipped counts as a failure here)
  local name=$1; shift
  if "$@" >"$LOGS/$name.log" 2>&1; then pass "$name"; else fail "$name (exit $?; $LOGS/$name.log)"; tail -20 "$LOGS/$name.log"; fi
}

step "2. kernels"
run kernel_logic "$EXE_KL"
run kernels_gpu "$EXE_KG"
run codecs_gpu "$EXE_CG"

step "3. NCCL backend and executor"
run nccl_executor_np1 "${MPIRUN[@]}" -np 1 "$EXE_NE"
run nccl_collectives_np1 "${MPIRUN[@]}" -np 1 "$EXE_NC"
if [ "$GPUS" -gt 1 ]; then
  run nccl_executor_np$GPUS "${MPIRUN[@]}" -np "$GPUS" "$EXE_NE"
  # the collective bodies tests/mpi runs on MPI, on NCCL with one rank per GPU
  run nccl_collectives_np$GPUS "${MPIRUN[@]}" -np "$GPUS" "$EXE_NC"
fi

step "4. compute-sanitizer"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$CS" ]; then
  for tool in memcheck racecheck initcheck synccheck; do
    run "sanitizer_$tool" "$CS" --tool "$tool" --error-exitcode 1 "$EXE_KG"
    run "sanitizer_codecs_$tool" "$CS" --tool "$tool" --error-exitcode 1 "$EXE_CG"
  done
  # NCCL probes, when a communicator is created, which of its kernels the device can run:
  # cudaFuncGetAttributes on every kernel of libnccl (ncclInitKernelsForDevice), and the ones
  # not built for this architecture return cudaErrorNoKernelImageForDevice, which NCCL expects
  # and ignores. memcheck reports every failed CUDA API call as an error by default (72 of them
  # with NCCL 2.28.9 on an H100, all from that probe), so the API-error report is turned off
  # here: memory errors of the kernels and of NCCL are still reported.
  run sanitizer_memcheck_nccl "$CS" --tool memcheck --report-api-errors no --error-exitcode 1 "$EXE_NE"
else
  fail "compute-sanitizer not found"
fi

step "5. the tuner plugin in NCCL"
run tuner_harness "$B/tests/plugin/autosync_tuner_harness" "$PLUGIN"
NP=$([ "$GPUS" -gt 1 ] && echo "$GPUS" || echo 1)
NCCL_TUNER_PLUGIN=$PLUGIN NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,INIT \
  "${MPIRUN[@]}" -x NCCL_TUNER_PLUGIN -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -np "$NP" "$TRAINER" --steps 20 >"$LOGS/tuner_nccl.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "autosync tuner: communicator of" "$LOGS/tuner_nccl.log"; then
  pass "NCCL loaded the plugin"
else
  fail "NCCL did not load the plugin (exit $rc; $LOGS/tuner_nccl.log)"
fi
if [ "$NP" -gt 1 ]; then
  if grep -E "autosync tuner: (AllReduce|ReduceScatter|AllGather|Broadcast|Reduce) .* -> (RING|TREE|PAT)/" "$LOGS/tuner_nccl.log" | head -5; then
    pass "the plugin's choices are in NCCL's log"
  else
    fail "no choice of the plugin in NCCL's log ($LOGS/tuner_nccl.log)"
  fi
else
  echo "(one GPU: NCCL does not consult a tuner for one-rank communicators; the choices need 2+ GPUs)"
fi
# per-communicator pins: the executor's random plans (ring / tree / halving_doubling buckets) run
# on duplicates of the world pinned through the plugin; NCCL's log must show the pins and the
# pinned choices (one rank: NCCL consults no tuner, nothing to see)
if [ "$NP" -gt 1 ]; then
  NCCL_TUNER_PLUGIN=$PLUGIN NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING \
    "${MPIRUN[@]}" -x NCCL_TUNER_PLUGIN -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -np "$NP" "$EXE_NE" >"$LOGS/tuner_pins.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q "pinned by the program: AllReduce" "$LOGS/tuner_pins.log" &&
     grep -qE -- "-> (RING|TREE|PAT)/[A-Z0-9]+ \(pinned by the program" "$LOGS/tuner_pins.log"; then
    pass "pinned communicators: the plan's algorithms in NCCL's log"
  else
    fail "pinned communicators (exit $rc; $LOGS/tuner_pins.log)"
  fi
fi
# a bad variable must not end the job (NCCL fails a communicator whose tuner init fails): the
# plugin WARNs naming it and leaves NCCL's choices alone
AUTOSYNC_TUNER_CLUSTER=no-such-cluster NCCL_TUNER_PLUGIN=$PLUGIN NCCL_DEBUG=WARN \
  "${MPIRUN[@]}" -x AUTOSYNC_TUNER_CLUSTER -x NCCL_TUNER_PLUGIN -x NCCL_DEBUG -np "$NP" "$TRAINER" --steps 5 >"$LOGS/tuner_bad_variable.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "AUTOSYNC_TUNER_CLUSTER.*no-such-cluster.*NCCL's own" "$LOGS/tuner_bad_variable.log"; then
  pass "a bad AUTOSYNC_TUNER_CLUSTER: WARN, and the job ran"
else
  fail "a bad AUTOSYNC_TUNER_CLUSTER (exit $rc; $LOGS/tuner_bad_variable.log)"
fi

step "6. the trainer"
"${MPIRUN[@]}" -np "$NP" "$TRAINER" --steps 200 >"$LOGS/trainer.log" 2>&1
rc=$?
first=$(grep -m1 '^step' "$LOGS/trainer.log" | awk '{print $4}')
last=$(grep '^step' "$LOGS/trainer.log" | tail -1 | awk '{print $4}')
if [ $rc -eq 0 ] && [ -n "$first" ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.7 * a) }'; then
  pass "trainer (loss $first -> $last)"
else
  fail "trainer (exit $rc, loss $first -> $last; $LOGS/trainer.log)"
fi

step "7. benchmark"
"$BENCH" 31 | tee "$LOGS/bench.log"
# the timeline of one pipeline iteration (buckets in flight on their streams), when nsys is there
if command -v nsys >/dev/null 2>&1; then
  nsys profile --capture-range=cudaProfilerApi --capture-range-end=repeat -t cuda,nvtx -f true -o "$LOGS/pipeline" \
    "$BENCH" 20 --timeline >"$LOGS/timeline.log" 2>&1 &&
    nsys stats --report cuda_gpu_trace --format csv -o "$LOGS/pipeline" "$LOGS/pipeline.nsys-rep" >>"$LOGS/timeline.log" 2>&1 &&
    echo "timeline: $LOGS/pipeline.nsys-rep ($LOGS/pipeline_cuda_gpu_trace.csv: kernels and NCCL per stream)"
fi

echo
[ $failed -eq 0 ] && echo "all GPU checks passed" || echo "some GPU checks FAILED (logs in $LOGS)"
exit $failed
