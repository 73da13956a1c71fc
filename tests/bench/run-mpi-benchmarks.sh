#!/usr/bin/env bash
# Runs the MPI benchmarks of tests/bench in one go and prints their figures side by side:
#
#   1. bench_mpi_fused_allreduce   one fused bucket through autosync vs MPI_Allreduce, 1 KiB-256 MiB
#   2. autosync calibrate          this host's link and reduction rate -> a cluster JSON
#   3. bench_mpi_models            resnet50 and bert-base on that calibrated cluster: autosync's
#                                  found strategy vs autosync running the DDP baseline strategy
#                                  (measured, predicted on the calibrated cluster and on the
#                                  local-<N> preset); writes the model files for step 4
#   4. ddp_torch.py                PyTorch DDP itself (gloo) on the same tensors
#   5. a summary: found vs autosync-DDP vs PyTorch DDP per model, with ratios, and measured vs
#      predicted (calibrated and preset)
#   6. bench_mpi_typed_dispatch    one strategy through the runtime executor and typed_executor:
#                                  the typed / dispatched speed ratio (when it was built)
# The load average is printed before and after each step: the machine may be shared.
#
# Builds nothing: configure and build first (cmake --build build), then
#   tests/bench/run-mpi-benchmarks.sh [build-dir]            (default: build)
# Environment: NP (ranks, default 4), SCALE (model scale for bench_mpi_models, default 0.25),
# ITERS (default 10), MPIRUN (default mpirun), PYTHON (an interpreter with torch; otherwise the
# first of python3, /usr/bin/python3 that can import torch.distributed), FUSED_ARGS (extra
# arguments for bench_mpi_fused_allreduce, e.g. "--max-bytes 16777216").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
np=${NP:-4}
scale=${SCALE:-0.25}
iters=${ITERS:-10}
mpirun_cmd=${MPIRUN:-mpirun}

bin=$build/tests/bench
for b in $bin/bench_mpi_fused_allreduce $bin/bench_mpi_models $build/bin/autosync; do
  if [ ! -x "$b" ]; then
    echo "run-mpi-benchmarks: $b not found: build it first (cmake --build $build; MPI must be found)" >&2
    exit 2
  fi
done
load() { echo "   (load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S) UTC)"; }

mpi_flags=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)

python=""
for c in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import torch.distributed as d; assert d.is_gloo_available()' >/dev/null 2>&1; then
    python=$c
    break
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== machine: $(nproc) cores, $(uname -m), load average $(cut -d' ' -f1-3 /proc/loadavg); ranks: $np"
echo
echo "== 1. fused-bucket all-reduce (bench_mpi_fused_allreduce)"
load
# shellcheck disable=SC2086
"$mpirun_cmd" "${mpi_flags[@]}" -np "$np" "$bin/bench_mpi_fused_allreduce" ${FUSED_ARGS:-}
load
echo
echo "== 2. this host calibrated (autosync calibrate)"
load
"$mpirun_cmd" "${mpi_flags[@]}" -np "$np" "$build/bin/autosync" calibrate --out "$tmp/cluster.json"
echo
echo "== 3. zoo models through the executor (bench_mpi_models --scale $scale --cluster <calibrated>)"
load
"$mpirun_cmd" "${mpi_flags[@]}" -np "$np" "$bin/bench_mpi_models" --scale "$scale" --iters "$iters" --model-out "$tmp/models" \
  --cluster "$tmp/cluster.json" | tee "$tmp/models.txt"
load
echo
echo "== 4. PyTorch DDP (ddp_torch.py)"
if [ -n "$python" ]; then
  "$python" "$here/ddp_torch.py" --ranks "$np" --iters "$iters" \
    --model-json "$tmp/models/resnet50.json" --model-json "$tmp/models/bert-base.json" | tee "$tmp/torch.txt"
else
  echo "(skipped: no python3 with torch.distributed + gloo; set PYTHON=...)"
  : > "$tmp/torch.txt"
fi
echo
load
echo
echo "== 5. summary: iteration sync time, ms (median, max over ranks; model scale $scale, $np ranks)"
echo "   found = autosync's searched strategy, ddp = autosync executing the DDP baseline strategy,"
echo "   torch = PyTorch DDP (gloo) span first bucket launched -> last reduced; ratios > 1: found is faster;"
echo "   meas/pred: measured over predicted on the calibrated cluster, meas/preset: over predicted on local-$np"
cat "$tmp/models.txt" "$tmp/torch.txt" | awk '
  /^result / {
    m = ""; s = ""; w = ""; sy = ""; pr = ""; pp = ""
    for (i = 2; i <= NF; ++i) {
      split($i, kv, "=")
      if (kv[1] == "model") m = kv[2]
      else if (kv[1] == "strategy") s = kv[2]
      else if (kv[1] == "wall_ms") w = kv[2]
      else if (kv[1] == "sync_ms") sy = kv[2]
      else if (kv[1] == "predicted_ms") pr = kv[2]
      else if (kv[1] == "preset_predicted_ms") pp = kv[2]
    }
    if (!(m in seen)) { seen[m] = 1; order[++n] = m }
    if (s == "torch-ddp") val[m, s] = sy; else val[m, s] = w
    if (pr != "") pred[m, s] = pr
    if (pp != "") preset[m, s] = pp
  }
  function show(x) { return x == "" ? "-" : sprintf("%.2f", x) }
  function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
  END {
    printf "%-12s %10s %10s %10s %10s %11s %10s %10s %10s %10s %10s\n", "model", "found", "ddp", "torch", "ddp/found", "torch/found",
           "torch/ddp", "found:m/p", "found:m/pp", "ddp:m/p", "ddp:m/pp"
    for (k = 1; k <= n; ++k) {
      m = order[k]
      f = val[m, "found"]; d = val[m, "ddp"]; t = val[m, "torch-ddp"]
      printf "%-12s %10s %10s %10s %10s %11s %10s %10s %10s %10s %10s\n", m, show(f), show(d), show(t), ratio(d, f), ratio(t, f),
             ratio(t, d), ratio(f, pred[m, "found"]), ratio(f, preset[m, "found"]), ratio(d, pred[m, "ddp"]), ratio(d, preset[m, "ddp"])
    }
  }'

if [ -x "$bin/bench_mpi_typed_dispatch" ]; then
  echo
  echo "== 6. typed vs dispatched executor (bench_mpi_typed_dispatch --scale $scale)"
  load
  "$mpirun_cmd" "${mpi_flags[@]}" -np "$np" "$bin/bench_mpi_typed_dispatch" --scale "$scale" --iters "$((iters * 3 + 1))"
  load
fi
