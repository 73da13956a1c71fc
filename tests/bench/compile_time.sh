#!/usr/bin/env bash
# Compile time of translation units that include autosync headers, at -O2, against the target
# for the umbrella header (8 s). Prints one row per header: seconds, target, ratio. With MPI
# (mpicxx --showme:compile), two more rows: a trainer's translation unit that includes only
# <autosync/session.hpp> and the MPI backend and drives a session (target 8 s), and the one
# translation unit that compiles the session's definitions (session_impl.hpp; no target: once
# per program). The best of three runs each; take final figures on a quiet machine.
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

# best of three compiles of $tmp/tu.cpp with extra flags "$@"
best_of_three() {
  local best="" s e t
  for rep in 1 2 3; do
    s=$(date +%s.%N)
    "$cxx" -std=c++20 -O2 -Iinclude "$@" -c "$tmp/tu.cpp" -o "$tmp/tu.o"
    e=$(date +%s.%N)
    t=$(awk -v a="$s" -v b="$e" 'BEGIN { print b - a }')
    if [ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
  done
  echo "$best"
}
if mpiflags=$(mpicxx --showme:compile 2>/dev/null); then
  cat > "$tmp/tu.cpp" <<'CPP'
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/session.hpp>
#include <span>
#include <vector>
// a trainer's translation unit: builds a session, runs iterations (the definitions live elsewhere)
int train(autosync::exec::mpi_backend& world, const autosync::model_spec& m, std::vector<std::vector<float>>& g) {
  autosync::session s(world, m, autosync::strategy_file{"s.json"});
  s.on_bucket_done([](const autosync::bucket_info& b) { (void)b; });
  for (int k = 0; k < 10; ++k) {
    s.begin(g);
    for (std::size_t t = m.tensors.size(); t-- > 0;) s.ready(m.tensors[t].name);
    s.finish();
  }
  return 0;
}
CPP
  # shellcheck disable=SC2086
  best=$(best_of_three $mpiflags)
  printf '%-40s %10.2f %10.2f %8.2f\n' "session TU (session.hpp + mpi)" "$best" 8 "$(awk -v b="$best" 'BEGIN { print b / 8 }')"
  printf '#include <autosync/exec/mpi/backend.hpp>\n#include <autosync/session_impl.hpp>\ntemplate class autosync::session<autosync::exec::mpi_backend>;\n' > "$tmp/tu.cpp"
  # shellcheck disable=SC2086
  best=$(best_of_three $mpiflags)
  printf '%-40s %10.2f %10s %8s\n' "session_impl.hpp (once per program)" "$best" - -
fi
