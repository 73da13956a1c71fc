#!/usr/bin/env bash
# tests/mpi/fault/random-faults.sh — randomized faults across ranks: runs autosync_mpi_random_faults
# (random_faults.cpp: one random small model, one random valid strategy, 2..8 ranks and one random
# fault per seed) for a range of seeds and checks, for every run, the property:
#
#   the job ends either with exit 0 and "exact sums" on every rank, or with a non-zero exit and an
#   error naming the faulty rank (or the field) within AUTOSYNC_TIMEOUT_S + BOUND seconds of the
#   fault's injection; never a hang (a job still running TIMEOUT_S * 3 + BOUND + 60 s after it
#   started is killed and counted as a hang), never a "WRONG SUM" on any rank.
#
# What "naming" means per fault (V: the faulty rank):
#   delay      a peer's wait timed out "... waiting for rank V (tag N)"
#   kill       Open MPI names the killed process: "process rank V" / "rank V with PID"
#   strategy   "strategy mismatch: rank V differs from rank R at group G" (R: the rank whose
#              strategy most ranks share; at 2 ranks "rank 1 differs from rank 0", whichever is V)
#   truncated  "rank V: failed ...: <file>.V.json:<line>:<column>: '<field>': ..."
#   twice      "rank V: failed ...: 'tensor': ... was already marked ready"
#   never      "rank V: failed ...: 'ready': ... finish() before tensor ..."
#
# Usage:
#   random-faults.sh --build <build dir> [--runs N] [--minutes M] [--first-seed S] [--timeout T] [--bound B]
#   random-faults.sh --exe <autosync_mpi_random_faults> --mpiexec <mpiexec> [...]
# Defaults: --runs 50 --first-seed 1 --timeout 3 --bound 30 --work <build dir or /tmp>/random_faults.
# --minutes M: start no run after M minutes (with a large --runs: as many runs as fit).
# Prints one line per run (seed, ranks, fault, victim, outcome, detection time) and a summary; exits
# non-zero when any run broke the property (each such run's full output is kept in the work folder).
set -u

runs=50 minutes=0 first=1 timeout_s=3 bound=30 exe="" mpiexec="${MPIEXEC:-mpiexec}" np_flag=-np work="" build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --first-seed) first=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --bound) bound=$2; shift 2 ;;
    --exe) exe=$2; shift 2 ;;
    --mpiexec) mpiexec=$2; shift 2 ;;
    --np-flag) np_flag=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "random-faults.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
done
if [ -z "$exe" ]; then
  [ -n "$build" ] || { echo "random-faults.sh: pass --build <build dir> or --exe <autosync_mpi_random_faults>" >&2; exit 2; }
  exe="$build/tests/mpi/autosync_mpi_random_faults"
fi
[ -x "$exe" ] || { echo "random-faults.sh: '$exe' is not an executable (build the target autosync_mpi_random_faults)" >&2; exit 2; }
for v in runs minutes first timeout_s bound; do
  case "${!v}" in ''|*[!0-9]*) echo "random-faults.sh: --${v%_s} must be a whole number, got '${!v}'" >&2; exit 2 ;; esac
done
[ "$timeout_s" -ge 1 ] || { echo "random-faults.sh: --timeout must be at least 1 s" >&2; exit 2; }
if [ -z "$work" ]; then work="${build:-${TMPDIR:-/tmp}}/random_faults"; fi
mkdir -p "$work" || exit 2
hang=$((timeout_s * 3 + bound + 60))
limit=$((timeout_s + bound))

now() { date +%s.%N; }
stop_at=$(( $(date +%s) + minutes * 60 ))
declare -A by_fault=() by_outcome=()
bad=0 hangs=0 wrong=0 slowest=0 slowest_seed="" total=0
printf '%-6s %-5s %-9s %-6s %-8s %s\n' seed ranks fault victim outcome "detection (s)"
for ((seed = first; seed < first + runs; ++seed)); do
  if [ "$minutes" -gt 0 ] && [ "$(date +%s)" -ge "$stop_at" ]; then break; fi
  read -r _ ranks _ fault _ victim < <("$exe" --describe --seed "$seed") || { echo "seed $seed: --describe failed" >&2; bad=$((bad + 1)); continue; }
  log="$work/seed-$seed.log"
  t0=$(now)
  AUTOSYNC_TIMEOUT_S=$timeout_s timeout -k 10 "$hang" \
    "$mpiexec" --oversubscribe --allow-run-as-root "$np_flag" "$ranks" "$exe" --seed "$seed" --dir "$work" >"$log" 2>&1
  rc=$?
  t1=$(now)
  exact=$(grep -c '^rank [0-9]*: exact sums' "$log")
  inj=$(sed -n 's/^rank [0-9]*: fault [a-z]* injected at \([0-9.]*\).*/\1/p' "$log" | head -1)
  [ -n "$inj" ] || inj=$t0
  detect=$(awk -v a="$t1" -v b="$inj" 'BEGIN { printf "%.2f", a - b }')
  named=0
  case "$fault" in
    delay) grep -Eq "waiting for rank $victim \(" "$log" && named=1 ;;
    kill) grep -Eq "process rank $victim |rank $victim with PID|Process name: \[\[[0-9]+,[0-9]+\],$victim\]" "$log" && named=1 ;;
    strategy)  # the odd rank out; with 2 ranks neither is the odd one (rank 1 is named)
      grep -Eq "strategy mismatch: rank $victim differs from rank [0-9]+ at group [0-9]+" "$log" && named=1
      [ "$ranks" -eq 2 ] && grep -Eq "strategy mismatch: rank 1 differs from rank 0 at group [0-9]+" "$log" && named=1 ;;
    truncated) grep -Eq "^rank $victim: failed after [0-9.]+ s: .*\.$victim\.json:[0-9]+:[0-9]+: " "$log" && named=1 ;;
    twice) grep -Eq "^rank $victim: failed after [0-9.]+ s: 'tensor': .*already marked ready" "$log" && named=1 ;;
    never) grep -Eq "^rank $victim: failed after [0-9.]+ s: 'ready': .*finish\(\) before tensor" "$log" && named=1 ;;
  esac
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 -a "$(awk -v a="$t1" -v b="$t0" -v h="$hang" 'BEGIN { print (a - b >= h) }')" = 1 ]; then
    outcome=HANG; hangs=$((hangs + 1))
  elif grep -q 'WRONG SUM' "$log"; then
    outcome=WRONG; wrong=$((wrong + 1))
  elif [ "$rc" -eq 0 ]; then
    if [ "$exact" -eq "$ranks" ]; then outcome=exact; else outcome=WRONG; wrong=$((wrong + 1)); fi  # success without every sum checked
  elif [ "$named" -eq 0 ]; then
    outcome=UNNAMED
  elif awk -v d="$detect" -v l="$limit" 'BEGIN { exit !(d > l) }'; then
    outcome=SLOW
  else
    outcome=error
  fi
  case "$outcome" in exact|error) rm -f "$log" ;; *) bad=$((bad + 1)) ;; esac
  if awk -v d="$detect" -v s="$slowest" 'BEGIN { exit !(d > s) }'; then slowest=$detect slowest_seed="$seed ($fault, $ranks ranks)"; fi
  by_fault[$fault]=$((${by_fault[$fault]:-0} + 1))
  by_outcome[$outcome]=$((${by_outcome[$outcome]:-0} + 1))
  total=$((total + 1))
  printf '%-6s %-5s %-9s %-6s %-8s %s\n' "$seed" "$ranks" "$fault" "$victim" "$outcome" "$detect"
done
echo "--- summary ---"
echo "runs: $total (seeds $first..$((seed - 1))), AUTOSYNC_TIMEOUT_S=$timeout_s, bound $limit s after the injection"
printf 'faults:'; for f in delay kill strategy truncated twice never; do printf ' %s %s' "$f" "${by_fault[$f]:-0}"; done; echo
printf 'outcomes:'; for o in "${!by_outcome[@]}"; do printf ' %s %s' "$o" "${by_outcome[$o]}"; done; echo
echo "slowest detection: $slowest s (seed $slowest_seed)"
echo "hangs: $hangs, wrong results: $wrong, runs breaking the property: $bad"
[ "$bad" -eq 0 ] || { echo "logs of the failing runs: $work/seed-<seed>.log"; exit 1; }
