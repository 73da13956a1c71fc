#!/usr/bin/env bash
# tests/testbed/smoke.sh AUTOSYNC WORKDIR — the testbed end to end (ctest: testbed.smoke).
#
# Brings up 2 emulated hosts x 1 rank at 200 Mb/s, runs `autosync run` of a small model (8 f32
# tensors of 512 KiB, all in one all_reduce ring bucket) through them and checks:
#   - the run succeeded (exact sums on every rank) and appended one valid trial record;
#   - every measured iteration's sync time is at least the bandwidth bound 2(p-1)/p * S / B of
#     the bytes a ring all-reduce must move (S the model's bytes, B the shaped rate in bytes/s);
#   - the shapers counted at least those bytes on each host, in both directions, for every
#     iteration run (warm-up included): the ranks' traffic went through the shaped links;
#   - teardown left no namespace of this run and nothing new in the root namespace's links.
# Exit 77 (ctest SKIP_RETURN_CODE) when the machine cannot host a testbed (not root, no ip/tc,
# no network namespaces), with the reason.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: smoke.sh AUTOSYNC WORKDIR" >&2; exit 2; }
autosync=$(realpath "$1") work=$(realpath -m "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testbed="$here/testbed.sh"

if ! reason=$("$testbed" check); then
  echo "SKIP: $reason"
  exit 77
fi
echo "$reason"

# a run killed before its teardown (ctest's timeout) leaves astb-ct<pid>-*: remove those of dead runs
for stale in $(ip netns list | awk '{print $1}' | sed -n 's/^astb-ct\([0-9]*\)-.*/\1/p' | sort -u); do
  kill -0 "$stale" 2>/dev/null || "$testbed" down --name "ct$stale" || true
done

rm -rf "$work"
mkdir -p "$work"
cd "$work"
name="ct$$"
rate=200mbit rate_bps=200000000
iters=3 warmup=1

python3 - <<'PY'
import json
tensors = [{"name": f"layer{i}.weight", "shape": [128, 1024], "dtype": "f32", "backward_flops": 1e6} for i in range(8)]
json.dump({"name": "smoke", "tensors": tensors}, open("model.json", "w"))
json.dump({"name": "ring-one-bucket",
           "groups": [{"architecture": "all_reduce", "topology": "ring", "fusion": {"cap_bytes": 1 << 30}}],
           "assignments": [{"tensor": t["name"], "group": 0} for t in tensors]}, open("strategy.json", "w"))
PY

links_before=$(ip -o link show | awk -F': ' '{print $2}' | sort)
status=0
"$testbed" exec --name "$name" --hosts 2 --ranks-per-host 1 --rate "$rate" --cluster-out cluster.json --counters counters.txt -- \
  "$autosync" run --strategy strategy.json --model model.json --cluster cluster.json --iters $iters --warmup $warmup \
  --records trials.jsonl >run.log 2>&1 || status=$?
cat run.log
[ $status -eq 0 ] || { echo "FAIL: the testbed run exited with $status"; exit 1; }

fail=0
left=$(ip netns list | awk '{print $1}' | grep "^astb-$name-" || true)
[ -z "$left" ] || { echo "FAIL: namespaces left after teardown: $left"; fail=1; }
links_after=$(ip -o link show | awk -F': ' '{print $2}' | sort)
[ "$links_before" = "$links_after" ] || { echo "FAIL: the root namespace's links changed: $(comm -13 <(echo "$links_before") <(echo "$links_after") | tr '\n' ' ')"; fail=1; }
grep -q "every sum exact on every rank" run.log || { echo "FAIL: the run did not report exact sums"; fail=1; }

python3 - "$rate_bps" "$iters" "$warmup" <<'PY' || fail=1
import json, sys
rate_bps, iters, warmup = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
model = json.load(open("model.json"))
S = sum(4 * t["shape"][0] * t["shape"][1] for t in model["tensors"])
lines = [l for l in open("trials.jsonl") if l.strip()]
ok = True
def check(cond, what):
    global ok
    print(("ok:   " if cond else "FAIL: ") + what)
    ok = ok and cond
check(len(lines) == 1, f"one trial record written (got {len(lines)})")
rec = json.loads(lines[0])
p = rec["environment"]["ranks"]
check(p == 2 and rec["cluster"]["ranks_per_node"] == 1, f"2 ranks, 1 per node (got {p}, {rec['cluster']['ranks_per_node']})")
check(len(rec["iterations"]) == iters, f"{iters} measured iterations (got {len(rec['iterations'])})")
check([n["nic"]["bandwidth"] for n in rec["cluster"]["nodes"]] == [rate_bps / 8] * 2, "the record's cluster is the testbed's")
B = rate_bps / 8
bound = 2 * (p - 1) / p * S / B
for i, it in enumerate(rec["iterations"]):
    check(it["sync_s"] >= bound, f"iteration {i + 1}: sync {it['sync_s'] * 1e3:.2f} ms >= bound 2(p-1)/p*S/B = {bound * 1e3:.2f} ms "
          f"(ratio {it['sync_s'] / bound:.3f})")
crossed = (iters + warmup) * 2 * (p - 1) / p * S
for line in open("counters.txt"):
    host, sent, received = line.split()
    check(int(sent) >= crossed and int(received) >= crossed,
          f"{host}: the shaper counted {int(sent)} bytes sent, {int(received)} received >= {int(crossed)} "
          f"(a ring all-reduce of {S} bytes x {iters + warmup} iterations)")
sys.exit(0 if ok else 1)
PY
[ $fail -eq 0 ] && echo "testbed smoke: passed" || { echo "testbed smoke: FAILED"; exit 1; }
