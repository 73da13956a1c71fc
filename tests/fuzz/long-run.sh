#!/usr/bin/env bash
# Long fuzzing in one command: every libFuzzer target of the fuzz preset, for a given time
# each, with corpora kept between runs, and a summary table of executions and crashes.
#
#   tests/fuzz/long-run.sh [--seconds S] [--runs N] [--jobs J] [--build DIR] [--corpus DIR] [TARGET...]
#
#   --seconds S   time per target (default 600, i.e. 10 minutes)
#   --runs N      stop a target after N executions instead; with --runs the time limit is
#                 off unless --seconds is also given (then whichever comes first)
#   --jobs J      targets fuzzed at the same time (default 1)
#   --build DIR   the fuzz build folder (default build/fuzz; built with
#                 `cmake --preset fuzz && cmake --build --preset fuzz` when it has no targets)
#   --corpus DIR  where the grown corpora are kept (default DIR-of-build/long-corpus); each
#                 target starts from its kept corpus plus the seeds in tests/fuzz/corpus/<name>
#   TARGET...     only these targets (names with or without the fuzz_ prefix)
#
# Targets are discovered: every executable fuzz_<name> in the build folder's tests/fuzz/, so a
# loader added to tests/fuzz/CMakeLists.txt joins without touching this script. The dictionary
# is tests/fuzz/<name>.dict when it exists, tests/fuzz/json.dict otherwise. Crash, leak,
# timeout and OOM reproducers are left under <corpus>/<name>/artifacts/. The exit status is 1
# when any target found one, 0 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=600
seconds_given=0
runs=""
jobs=1
build="$root/build/fuzz"
corpus=""
only=()

usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --seconds) seconds=${2:?--seconds needs a value}; seconds_given=1; shift 2 ;;
    --runs) runs=${2:?--runs needs a value}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a value}; shift 2 ;;
    --build) build=${2:?--build needs a value}; shift 2 ;;
    --corpus) corpus=${2:?--corpus needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "long-run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) only+=("${1#fuzz_}"); shift ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "long-run.sh: --seconds must be a positive integer, got '$seconds'" >&2; exit 2; }
[[ -z "$runs" || "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "long-run.sh: --runs must be a positive integer, got '$runs'" >&2; exit 2; }
# libFuzzer's -max_total_time=0 means no time limit.
if [[ -n "$runs" && "$seconds_given" == 0 ]]; then seconds=0; fi
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "long-run.sh: --jobs must be a positive integer, got '$jobs'" >&2; exit 2; }
[[ -n "$corpus" ]] || corpus="$(dirname "$build")/long-corpus"

discover() {
  find "$build/tests/fuzz" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x 2>/dev/null \
    | sed 's|.*/fuzz_||' | sort
}
names=$(discover)
if [[ -z "$names" ]]; then
  echo "long-run.sh: no fuzz targets under $build/tests/fuzz; building the fuzz preset" >&2
  (cd "$root" && cmake --preset fuzz >/dev/null && cmake --build --preset fuzz)
  names=$(discover)
fi
[[ -n "$names" ]] || { echo "long-run.sh: still no fuzz_* executables under $build/tests/fuzz" >&2; exit 2; }
if ((${#only[@]})); then
  for n in "${only[@]}"; do
    grep -qx "$n" <<<"$names" || { echo "long-run.sh: unknown target '$n' (have: $(echo $names))" >&2; exit 2; }
  done
  names=$(printf '%s\n' "${only[@]}")
fi

run_one() {
  local name=$1 dir="$corpus/$1" dict="$here/$1.dict"
  [[ -f "$dict" ]] || dict="$here/json.dict"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  if [[ -d "$here/corpus/$name" ]]; then cp -n "$here/corpus/$name"/* "$dir/corpus/" 2>/dev/null || true; fi
  local rc=0
  local limit=(-max_total_time="$seconds")
  [[ -z "$runs" ]] || limit+=(-runs="$runs")
  "$build/tests/fuzz/fuzz_$name" "${limit[@]}" -rss_limit_mb=2048 -timeout=10 \
    -dict="$dict" -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus" \
    >"$dir/last.log" 2>&1 || rc=$?
  echo "$rc" >"$dir/last.rc"
}

if [[ -n "$runs" ]]; then
  budget="$runs executions"; [[ "$seconds" == 0 ]] || budget+=" or ${seconds} s"
else
  budget="${seconds} s"
fi
echo "fuzzing $(wc -w <<<"$names") targets for $budget each, $jobs at a time; corpora in $corpus"
running=0
for n in $names; do
  run_one "$n" &
  running=$((running + 1))
  if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
done
wait || true

status=0
printf '\n%-24s %14s %12s %10s %8s  %s\n' target executions exec/s corpus crashes result
for n in $names; do
  dir="$corpus/$n"
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/last.log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$dir/last.log" | grep -o '[0-9]*$' | tail -1)
  files=$(find "$dir/corpus" -type f | wc -l)
  found=$(find "$dir/artifacts" -type f | wc -l)
  rc=$(cat "$dir/last.rc" 2>/dev/null || echo '?')
  result=ok
  if [[ "$rc" != 0 || "$found" != 0 ]]; then result="FAILED (exit $rc; see $dir/last.log)"; status=1; fi
  printf '%-24s %14s %12s %10s %8s  %s\n' "$n" "${execs:-?}" "${rate:-?}" "$files" "$found" "$result"
done
exit $status
