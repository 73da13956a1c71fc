#!/usr/bin/env bash
# Compile time of translation units that include autosync headers, at -O2, against the target
# for the umbrella header (8 s). Prints one row per header: seconds, target, ratio.
#   tests/bench/compile_time.sh [compiler]       (default: c++)
set -euo pipefail
cd "$(dirname "$0")/../.."
cxx=${1:-c++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-40s %10s %10s %8s\n' header seconds target ratio
for h in autosync/autosync.hpp autosync/cost/estimate.hpp autosync/search/optimizer.hpp autosync/io/json.hpp \
         autosync/strategy/dispatch.hpp autosync/graph.hpp autosync/zoo/models.hpp; do
  [ -f "include/$h" ] || continue
  printf '#include <%s>\nint main() { return 0; }\n' "$h" > "$tmp/tu.cpp"
  best=""
  for rep in 1 2 3; do
    s=$(date +%s.%N)
    "$cxx" -std=c++20 -O2 -Iinclude -c "$tmp/tu.cpp" -o "$tmp/tu.o"
    e=$(date +%s.%N)
    t=$(awk -v a="$s" -v b="$e" 'BEGIN { print b - a }')
    if [ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
  done
  printf '%-40s %10.2f %10.2f %8.2f\n' "$h" "$best" 8 "$(awk -v b="$best" 'BEGIN { print b / 8 }')"
done
