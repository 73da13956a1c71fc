#!/usr/bin/env bash
# tests/testbed/testbed.sh — a cluster in a box: N emulated hosts on one Linux machine.
#
#   testbed.sh up [--name T] --hosts N [--ranks-per-host K] [--rate R | --rates R0,R1,...]
#                 [--delay D | --delays D0,D1,...] [--cluster-out FILE] [--no-measure]
#   testbed.sh run [--name T] [--counters FILE] -- MPIRUN-ARGS...   (e.g. -- autosync run --strategy ...)
#   testbed.sh exec UP-OPTIONS [--counters FILE] -- MPIRUN-ARGS...  up, run, down in one call
#   testbed.sh measure [--name T]      time the shaped link between host 0 and host 1 again
#   testbed.sh down [--name T | --all] remove a testbed (also the leftovers of a crashed run)
#   testbed.sh check                   exit 0 when this machine can host a testbed, else 77 and why
#
# Every host is a network namespace with one interface, tb0, joined by a veth pair to a bridge
# that lives in a namespace of its own; mpirun runs in a control namespace on the same bridge.
# Nothing is added to the root namespace's network, and every name starts with "astb-<T>-":
#
#   astb-T-c (mpirun)   astb-T-h0 (K ranks)   astb-T-h1 (K ranks)   ...
#     tb0 198.18.0.254    tb0 198.18.0.1        tb0 198.18.0.2
#      |                   | htb rate R0         | htb rate R1           <- host egress
#      |                   | (+netem delay/2)    |
#     pc                  p0 htb rate R0        p1 htb rate R1          <- host ingress
#      └──────────────── br0 in astb-T-br ───────┘
#
# 198.18.0.0/15 is the range RFC 2544 reserves for benchmarking; it exists only inside these
# namespaces. A host's link is shaped in both directions (its tb0 and its bridge port), so a
# flow from host i to host j runs at min(Ri, Rj) and one-way latency (Di + Dj)/2 plus the
# measured base latency of the veth path. Delay needs the kernel's sch_netem; without it only
# --delay 0 is accepted. Ranks of one host talk through shared memory (OpenMPI's vader BTL);
# ranks of different hosts only through TCP on tb0 (btl_tcp_if_include / oob_tcp_if_include),
# so every inter-host byte crosses the shapers, and `run` prints what each shaper counted.
#
# mpirun uses its rsh launcher with a generated agent that enters the target host's namespace
# (`ip netns exec`, plus a UTS namespace so every host has its own hostname, which keeps
# OpenMPI's per-host shared-memory files apart). `run` adds the hostfile, -np N*K when no -np
# is given, and the MCA settings; the rest of the command line goes to mpirun unchanged.
#
# `up` writes the matching cluster JSON (the project's cluster format, include/autosync/io/json.hpp):
# one node per host with K devices, the NIC bandwidth from the rate, the NIC latency from the
# delay plus the measured base one-way latency, the intra-host figures of the local-<N> preset.
# `exec` always tears down (trap on EXIT, INT, TERM). Needs root, iproute2 (ip, tc), python3,
# OpenMPI's mpirun and a kernel with network namespaces, veth, bridge and sch_htb.
set -euo pipefail

readonly PREFIX=astb
readonly SUBNET=198.18.0
readonly STATE_ROOT=${AUTOSYNC_TESTBED_STATE:-/run/autosync-testbed}
readonly HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The local-<N> preset's intra-host figures (include/autosync/zoo/clusters.hpp: hw::shm_copy,
# hw::shm_latency, hw::cpu_core_flops, hw::cpu_core_reduce): ranks of one host share memory.
readonly INTRA_BW=8e9 INTRA_LAT=5e-7 CORE_FLOPS=2.88e10 CORE_REDUCE=4e9
# Each shaper queues up to QUEUE_BYTES (default 2 MiB, about a switch port's share of a shared
# buffer). A shallow queue turns every collective with two or more flows through one link
# (hierarchical, halving-doubling, parameter servers) into TCP incast: veth sends 64 KiB GSO
# bursts, a 128 KiB queue drops them, and each loss waits out TCP's 200 ms minimum
# retransmission timeout on a 50 us round trip. Measured on 2 hosts x 2 ranks at 1 Gb/s,
# resnet50 at 14 MiB: hierarchical<ring, ring> 571 ms with 1717 drops (128 KiB) against
# 174-199 ms with none (2 MiB); the flat ring, one flow per link, 215-218 ms with either.
readonly QUEUE_BYTES=${QUEUE_BYTES:-2097152}

die() { echo "testbed: error: $*" >&2; exit 1; }
usage() { sed -n "2,10p" "${BASH_SOURCE[0]}" | sed "s/^# \{0,1\}//" >&2; exit "${1:-2}"; }
log() { echo "testbed: $*" >&2; }
[[ $QUEUE_BYTES =~ ^[1-9][0-9]{3,9}$ ]] || die "QUEUE_BYTES must be a byte count from 1000 to 9999999999, got '$QUEUE_BYTES'"

# ---- checks ------------------------------------------------------------------------------------
# Prints why the testbed cannot run here (nothing when it can).
why_not() {
  [ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces, tc)"; return; }
  local t
  for t in ip tc python3 mpirun unshare hostname; do
    command -v "$t" >/dev/null || { echo "'$t' not found (Debian: iproute2, python3, openmpi-bin, util-linux, hostname)"; return; }
  done
  local probe="$PREFIX-probe$$"
  if ! ip netns add "$probe" 2>/dev/null; then echo "cannot create a network namespace (ip netns add)"; return; fi
  local r=""
  if ! ip -n "$probe" link add pa type veth peer name pb 2>/dev/null; then r="no veth support"
  elif ! ip -n "$probe" link add pbr type bridge 2>/dev/null; then r="no bridge support"
  elif ! tc -n "$probe" qdisc add dev pa root handle 1: htb default 1 2>/dev/null; then r="no htb qdisc (tc)"
  fi
  ip netns del "$probe" 2>/dev/null || true
  echo -n "$r"
}
have_netem() {
  local probe="$PREFIX-probe$$" ok=1
  ip netns add "$probe" 2>/dev/null || return 1
  ip -n "$probe" link add pa type veth peer name pb 2>/dev/null && tc -n "$probe" qdisc add dev pa root netem delay 1ms 2>/dev/null && ok=0
  ip netns del "$probe" 2>/dev/null || true
  return $ok
}

# ---- units ---------------------------------------------------------------------------------------
# tc rate ("500mbit", "1gbit", "800kbit", "100000000bit") -> bits/s
rate_bits() {
  local r=${1,,}
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit)$ ]] || die "--rate: '$1' is not a rate like 500mbit, 1gbit, 800kbit"
  local mult=1
  case ${BASH_REMATCH[3]} in kbit) mult=1e3 ;; mbit) mult=1e6 ;; gbit) mult=1e9 ;; esac
  python3 -c "import sys; v=float(sys.argv[1])*float(sys.argv[2]); print(int(v))" "${BASH_REMATCH[1]}" "$mult"
}
# tc time ("0.2ms", "50us", "0") -> seconds
delay_s() {
  local d=${1,,}
  [ "$d" = 0 ] && { echo 0; return; }
  [[ $d =~ ^([0-9]+(\.[0-9]+)?)(s|ms|us)$ ]] || die "--delay: '$1' is not a delay like 0.2ms, 50us or 0"
  local div=1
  case ${BASH_REMATCH[3]} in ms) div=1e3 ;; us) div=1e6 ;; esac
  python3 -c "import sys; print(float(sys.argv[1])/float(sys.argv[2]))" "${BASH_REMATCH[1]}" "$div"
}
half_delay_us() { python3 -c "import sys; print(f'{float(sys.argv[1])*1e6/2:g}us')" "$1"; }

# ---- names -------------------------------------------------------------------------------------
check_name() { [[ $1 =~ ^[a-z0-9]{1,12}$ ]] || die "--name: '$1' must be 1-12 characters of [a-z0-9]"; }
ns_bridge() { echo "$PREFIX-$1-br"; }
ns_ctl() { echo "$PREFIX-$1-c"; }
ns_host() { echo "$PREFIX-$1-h$2"; }
state_dir() { echo "$STATE_ROOT/$1"; }
our_namespaces() {  # $1: name, or "" for every testbed's
  local pat="^$PREFIX-${1:+$1-}"
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "$pat" || true
}

# ---- down --------------------------------------------------------------------------------------
# Stops what runs inside our namespaces (mpirun, orted, ranks), deletes the namespaces (their
# veths and the bridge go with them) and the state directory.
teardown() {
  local name=$1 ns pids n
  local list
  list=$(our_namespaces "$name")
  for ns in $list; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null || true
  done
  for n in 1 2 3 4 5 6 7 8 9 10; do
    pids=""
    for ns in $list; do pids+=" $(ip netns pids "$ns" 2>/dev/null || true)"; done
    [ -z "${pids// /}" ] && break
    [ "$n" -eq 10 ] && kill -KILL $pids 2>/dev/null || sleep 0.2
  done
  for ns in $list; do ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"; done
  if [ -n "$name" ]; then rm -rf "$(state_dir "$name")"; else rm -rf "$STATE_ROOT"; fi
  local left
  left=$(our_namespaces "$name")
  [ -z "$left" ] || die "namespaces left after teardown: $left"
}

# ---- up ----------------------------------------------------------------------------------------
UP_NAME=tb HOSTS="" RPH=1 RATE=500mbit RATES="" DELAY=0 DELAYS="" CLUSTER_OUT="" MEASURE=1
parse_up_opt() {  # returns the number of arguments consumed (via UP_SHIFT), 0 when not an up option
  UP_SHIFT=2
  case "$1" in
    --name) UP_NAME=${2:?--name needs a value} ;;
    --hosts) HOSTS=${2:?--hosts needs a value} ;;
    --ranks-per-host) RPH=${2:?--ranks-per-host needs a value} ;;
    --rate) RATE=${2:?--rate needs a value} ;;
    --rates) RATES=${2:?--rates needs a value} ;;
    --delay) DELAY=${2:?--delay needs a value} ;;
    --delays) DELAYS=${2:?--delays needs a value} ;;
    --cluster-out) CLUSTER_OUT=${2:?--cluster-out needs a value} ;;
    --no-measure) MEASURE=0; UP_SHIFT=1 ;;
    *) UP_SHIFT=0 ;;
  esac
}

up() {
  local name=$UP_NAME
  check_name "$name"
  [[ $HOSTS =~ ^[0-9]+$ ]] && [ "$HOSTS" -ge 1 ] && [ "$HOSTS" -le 64 ] || die "--hosts: must be in [1, 64], got '$HOSTS'"
  [[ $RPH =~ ^[0-9]+$ ]] && [ "$RPH" -ge 1 ] && [ "$RPH" -le 64 ] || die "--ranks-per-host: must be in [1, 64], got '$RPH'"
  local r
  r=$(why_not)
  [ -z "$r" ] || die "cannot build a testbed here: $r"
  [ -z "$(our_namespaces "$name")" ] && [ ! -e "$(state_dir "$name")" ] ||
    die "testbed '$name' exists (or a crashed run left it): testbed.sh down --name $name"

  local -a rates delays
  if [ -n "$RATES" ]; then IFS=, read -r -a rates <<<"$RATES"; else for ((i = 0; i < HOSTS; i++)); do rates+=("$RATE"); done; fi
  if [ -n "$DELAYS" ]; then IFS=, read -r -a delays <<<"$DELAYS"; else for ((i = 0; i < HOSTS; i++)); do delays+=("$DELAY"); done; fi
  [ ${#rates[@]} -eq "$HOSTS" ] || die "--rates: ${#rates[@]} rates for $HOSTS hosts"
  [ ${#delays[@]} -eq "$HOSTS" ] || die "--delays: ${#delays[@]} delays for $HOSTS hosts"
  local -a bits secs
  local netem_needed=0
  for ((i = 0; i < HOSTS; i++)); do
    bits+=("$(rate_bits "${rates[i]}")")
    secs+=("$(delay_s "${delays[i]}")")
    [ "${bits[i]}" -ge 1000000 ] || die "--rate of host $i: ${rates[i]} is below 1mbit"
    [ "${secs[i]}" = 0 ] || netem_needed=1
  done
  if [ $netem_needed = 1 ] && ! have_netem; then
    die "--delay: this kernel has no netem qdisc (sch_netem), so no delay can be added; use --delay 0 (the base latency is measured)"
  fi

  local sd br ctl
  CREATING=$name  # from here on a failure tears down (the `up` verb's trap)
  sd=$(state_dir "$name")
  br=$(ns_bridge "$name")
  ctl=$(ns_ctl "$name")
  mkdir -p "$sd"
  ip netns add "$br"
  ip -n "$br" link set lo up
  ip -n "$br" link add br0 type bridge
  ip -n "$br" link set br0 up
  # the control namespace: mpirun, unshaped
  ip netns add "$ctl"
  ip -n "$ctl" link set lo up
  ip -n "$ctl" link add tb0 type veth peer name pc netns "$br"
  ip -n "$ctl" addr add "$SUBNET.254/24" dev tb0
  ip -n "$ctl" link set tb0 up
  ip -n "$br" link set pc master br0 up
  : >"$sd/hosts.map"
  : >"$sd/hostfile"
  for ((i = 0; i < HOSTS; i++)); do
    local h ip
    h=$(ns_host "$name" "$i")
    ip=$SUBNET.$((i + 1))
    ip netns add "$h"
    ip -n "$h" link set lo up
    ip -n "$h" link add tb0 type veth peer name "p$i" netns "$br"
    ip -n "$h" addr add "$ip/24" dev tb0
    ip -n "$h" link set tb0 up
    ip -n "$br" link set "p$i" master br0 up
    # both directions: host egress on tb0, host ingress on its bridge port
    local dev ns q
    for q in "$h tb0" "$br p$i"; do
      read -r ns dev <<<"$q"
      tc -n "$ns" qdisc add dev "$dev" root handle 1: htb default 1 r2q 100
      tc -n "$ns" class add dev "$dev" parent 1: classid 1:1 htb rate "${bits[i]}bit" quantum 60000
      if [ "${secs[i]}" != 0 ]; then
        tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: netem delay "$(half_delay_us "${secs[i]}")" limit 1000
      else
        tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: bfifo limit "$QUEUE_BYTES"
      fi
    done
    echo "$ip $h" >>"$sd/hosts.map"
    echo "$ip slots=$RPH" >>"$sd/hostfile"
  done
  # the rsh agent mpirun uses: `agent [options] HOST COMMAND...` runs COMMAND in HOST's namespace
  cat >"$sd/agent" <<EOF
#!/bin/sh
# rsh agent of testbed '$name': run the command in the emulated host's namespace, as ssh would
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
ns=\$(awk -v h="\$host" '\$1 == h {print \$2}' "$sd/hosts.map")
[ -n "\$ns" ] || { echo "testbed agent: unknown host '\$host'" >&2; exit 255; }
exec ip netns exec "\$ns" unshare --uts /bin/sh -c 'hostname "\$0" && exec /bin/sh -c "\$1"' "\$ns" "\$*"
EOF
  chmod +x "$sd/agent"
  {
    echo "HOSTS=$HOSTS"
    echo "RPH=$RPH"
    echo "RATES=$(IFS=,; echo "${rates[*]}")"
    echo "BITS=$(IFS=,; echo "${bits[*]}")"
    echo "DELAYS=$(IFS=,; echo "${secs[*]}")"
  } >"$sd/config"
  log "up '$name': $HOSTS hosts x $RPH ranks, rates ${rates[*]}, delays ${delays[*]} (state in $sd)"

  local base_lat=0
  if [ "$MEASURE" = 1 ] && [ "$HOSTS" -ge 2 ]; then
    measure "$name"
    base_lat=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['rtt_s']/2 - r['configured_delay_s'])" "$sd/link.json")
  fi
  if [ -n "$CLUSTER_OUT" ]; then
    python3 - "$CLUSTER_OUT" "$name" "$RPH" "$base_lat" "${bits[*]}" "${secs[*]}" "${rates[*]}" "${delays[*]}" \
      "$INTRA_BW" "$INTRA_LAT" "$CORE_FLOPS" "$CORE_REDUCE" <<'PY'
import json, sys
out, name, rph, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), max(float(sys.argv[4]), 0.0)
bits, secs = [int(x) for x in sys.argv[5].split()], [float(x) for x in sys.argv[6].split()]
rates, delays = sys.argv[7].split(), sys.argv[8].split()
intra_bw, intra_lat, flops, reduce_bw = (float(x) for x in sys.argv[9:13])
def mbits(b): return f"{b / 1e6:g}Mb/s"
def us(s): return f"{s * 1e6:.1f}us"
nodes = [{"name": f"h{i}", "devices": rph, "intra": {"bandwidth": intra_bw, "latency": intra_lat},
          "nic": {"bandwidth": mbits(b), "latency": us(d + base)}, "nics": 1,
          "device_flops": flops, "reduce_bandwidth": reduce_bw} for i, (b, d) in enumerate(zip(bits, secs))]
same = len(set(rates)) == 1 and len(set(delays)) == 1
shape = f"{len(bits)}x{rph}-" + (rates[0] if same else "+".join(rates)) + ("" if set(delays) == {"0"} else "-" + ("+".join(delays) if not same else delays[0]))
c = {"name": f"testbed-{shape}", "device": "CPU core",
     "source": "tests/testbed: tc htb rate per host" + (", netem delay" if any(secs) else "") +
               f"; NIC latency adds the measured base one-way latency {base * 1e6:.1f}us; intra-host figures of local-<N>",
     "nodes": nodes}
with open(out, "w") as f:
    json.dump(c, f, indent=1)
    f.write("\n")
PY
    log "wrote the cluster JSON $CLUSTER_OUT"
  fi
}

# ---- measure: one TCP stream host 0 -> host 1 through both shapers ----------------------------------
measure() {
  local name=$1 sd
  sd=$(state_dir "$name")
  [ -f "$sd/config" ] || die "no testbed '$name' (testbed.sh up --name $name ...)"
  # shellcheck disable=SC1091
  . "$sd/config"
  [ "$HOSTS" -ge 2 ] || die "measure: needs two hosts"
  local b0 b1 d0 d1 bits delay nbytes port=45677
  IFS=, read -r b0 b1 _ <<<"$BITS,"
  IFS=, read -r d0 d1 _ <<<"$DELAYS,"
  bits=$((b0 < b1 ? b0 : b1))
  delay=$(python3 -c "import sys; print((float(sys.argv[1]) + float(sys.argv[2])) / 2)" "$d0" "$d1")
  nbytes=$((bits / 8 * 6 / 10))  # about 0.6 s at the configured rate
  [ "$nbytes" -ge 1000000 ] || nbytes=1000000
  ip netns exec "$(ns_host "$name" 1)" python3 "$HERE/linkprobe.py" serve "$SUBNET.2" $port &
  local srv=$!
  local res
  if ! res=$(ip netns exec "$(ns_host "$name" 0)" python3 "$HERE/linkprobe.py" probe "$SUBNET.2" $port "$nbytes"); then
    kill "$srv" 2>/dev/null || true
    die "measure: the probe from host 0 to host 1 failed"
  fi
  wait "$srv" || die "measure: the probe server on host 1 failed"
  python3 - "$res" "$bits" "$delay" "$sd/link.json" <<'PY'
import json, sys
r, bits, delay, out = json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
# TCP payload per 1514-byte frame (MTU 1500, IPv4 + TCP with timestamps: 52 bytes of headers);
# htb counts the frame with its 14-byte Ethernet header
payload = 1448 / 1514
r.update({"configured_bps": bits, "configured_delay_s": delay, "expected_goodput_bps": bits * payload})
json.dump(r, open(out, "w"))
print(f"testbed: link h0 -> h1: configured {bits / 1e6:g} Mb/s (TCP goodput at most {bits * payload / 1e6:.1f} Mb/s), "
      f"achieved {r['goodput_bps'] / 1e6:.1f} Mb/s = {r['goodput_bps'] / (bits * payload):.3f} of the goodput bound "
      f"({r['bytes'] / 1e6:.1f} MB in {r['seconds']:.3f} s); round trip {r['rtt_s'] * 1e6:.0f} us "
      f"(configured one-way delay {delay * 1e6:g} us)", file=sys.stderr)
PY
}

# ---- run: mpirun in the control namespace ----------------------------------------------------------
# Shaper byte counters, one line per host: "h<i> <tx bytes> <rx bytes>" (tx: host egress on tb0,
# rx: its bridge port's egress, i.e. what the host received).
counters() {
  local name=$1 i
  for ((i = 0; i < HOSTS; i++)); do
    local tx rx
    tx=$(tc -n "$(ns_host "$name" "$i")" -s qdisc show dev tb0 | awk '/^qdisc htb 1:/ {f=1} f && /Sent/ {print $2; exit}')
    rx=$(tc -n "$(ns_bridge "$name")" -s qdisc show dev "p$i" | awk '/^qdisc htb 1:/ {f=1} f && /Sent/ {print $2; exit}')
    echo "h$i $tx $rx"
  done
}

run() {
  local name=$1 counters_out=$2
  shift 2
  local sd
  sd=$(state_dir "$name")
  [ -f "$sd/config" ] || die "no testbed '$name' (testbed.sh up --name $name ...)"
  # shellcheck disable=SC1091
  . "$sd/config"
  local -a np=()
  local a
  local has_np=0
  for a in "$@"; do case "$a" in -np | -n | --np | -c) has_np=1 ;; esac; done
  [ $has_np = 1 ] || np=(-np $((HOSTS * RPH)))
  local before after
  before=$(counters "$name")
  local rc=0
  ip netns exec "$(ns_ctl "$name")" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$(ns_ctl "$name")" \
    env OMPI_MCA_plm=rsh OMPI_MCA_plm_rsh_agent="$sd/agent" OMPI_MCA_plm_rsh_no_tree_spawn=1 \
    OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_links="${OMPI_MCA_btl_tcp_links:-2}" OMPI_MCA_btl_tcp_if_include=tb0 OMPI_MCA_oob_tcp_if_include=tb0 \
    OMPI_MCA_osc='^ucx' OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_rmaps_base_oversubscribe=1 \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --hostfile "$sd/hostfile" "${np[@]}" "$@" || rc=$?
  after=$(counters "$name")
  local table
  table=$(paste -d' ' <(echo "$before") <(echo "$after") | awk '{printf "%s %d %d\n", $1, $5 - $2, $6 - $3}')
  log "bytes through the shapers during the run (host: sent received):" $(echo "$table" | awk '{printf "%s %d %d;", $1, $2, $3}')
  [ -z "$counters_out" ] || echo "$table" >"$counters_out"
  return $rc
}

# ---- main --------------------------------------------------------------------------------------
[ $# -ge 1 ] || usage
verb=$1
shift
case "$verb" in
  check)
    r=$(why_not)
    if [ -n "$r" ]; then echo "testbed: not available here: $r"; exit 77; fi
    have_netem && echo "testbed: available (netem delay available)" || echo "testbed: available (no netem: rate shaping only, delay 0)"
    ;;
  up)
    while [ $# -gt 0 ]; do
      parse_up_opt "$@"
      [ "$UP_SHIFT" -gt 0 ] || die "up: unknown option '$1'"
      shift "$UP_SHIFT"
    done
    [ -n "$HOSTS" ] || die "up: --hosts N is required"
    CREATING=""
    trap 'rc=$?; if [ $rc -ne 0 ] && [ -n "$CREATING" ]; then teardown "$CREATING"; fi; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    up
    ;;
  run)
    name=tb counters_out=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
      case "$1" in
        --name) name=${2:?}; shift 2 ;;
        --counters) counters_out=${2:?}; shift 2 ;;
        *) die "run: unknown option '$1' (the mpirun arguments follow --)" ;;
      esac
    done
    [ "${1:-}" = -- ] || die "run: give the mpirun arguments after --"
    shift
    check_name "$name"
    run "$name" "$counters_out" "$@"
    ;;
  exec)
    counters_out=""
    UP_NAME="x$$"
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
      parse_up_opt "$@"
      if [ "$UP_SHIFT" -gt 0 ]; then shift "$UP_SHIFT"; continue; fi
      case "$1" in
        --counters) counters_out=${2:?}; shift 2 ;;
        *) die "exec: unknown option '$1' (the mpirun arguments follow --)" ;;
      esac
    done
    [ "${1:-}" = -- ] || die "exec: give the mpirun arguments after --"
    shift
    [ -n "$HOSTS" ] || die "exec: --hosts N is required"
    check_name "$UP_NAME"
    [ -z "$(our_namespaces "$UP_NAME")" ] || die "testbed '$UP_NAME' exists: testbed.sh down --name $UP_NAME"
    trap 'teardown "$UP_NAME"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    up
    run "$UP_NAME" "$counters_out" "$@"
    ;;
  measure)
    name=tb
    [ "${1:-}" = --name ] && { name=${2:?}; shift 2; }
    [ $# -eq 0 ] || die "measure: unknown option '$1'"
    check_name "$name"
    measure "$name"
    ;;
  down)
    name=tb
    case "${1:-}" in
      --all) name="" ;;
      --name) name=${2:?}; check_name "$name" ;;
      "") ;;
      *) die "down: unknown option '$1'" ;;
    esac
    [ "$(id -u)" -eq 0 ] || die "down: needs root"
    teardown "$name"
    log "down${name:+ '$name'}: no namespace of ours left"
    ;;
  -h | --help | help) usage 0 ;;
  *) die "unknown verb '$verb' (up, run, exec, measure, down, check)" ;;
esac
