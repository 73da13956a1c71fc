#!/bin/sh
# The same inputs and seed give a byte-identical strategy: gpt2-xl on dgx-h100-x16 is searched
# twice, then once more while a busy loop is pinned (taskset) to the core the search runs on.
# Usage: search_determinism.sh AUTOSYNC WORKDIR
set -eu
autosync=$1
work=$2
mkdir -p "$work"
search() {
  "$@" optimize --model gpt2-xl --cluster dgx-h100-x16 --seed 7 --out "$work/$out.json" >/dev/null
}
out=a search "$autosync"
out=b search "$autosync"
cmp "$work/a.json" "$work/b.json"
if command -v taskset >/dev/null 2>&1; then
  # the first core this process may run on
  cpu=$(taskset -pc $$ | sed 's/.*: *//' | cut -d, -f1 | cut -d- -f1)
  taskset -c "$cpu" sh -c 'while :; do :; done' &
  busy=$!
  trap 'kill $busy 2>/dev/null || true' EXIT
  out=c search taskset -c "$cpu" "$autosync"
  kill $busy
  cmp "$work/a.json" "$work/c.json"
  echo "byte-identical strategy twice and under a busy loop on core $cpu"
else
  echo "byte-identical strategy twice (taskset not found: the run under load is left out)"
fi
