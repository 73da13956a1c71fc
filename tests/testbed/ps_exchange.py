#!/usr/bin/env python3
"""One parameter-server exchange on the testbed against the cost model's price of it.

    tests/testbed/ps_exchange.py [--autosync build/bin/autosync] [--rates 1gbit,500mbit,200mbit,100mbit]
                                 [--kib 64,256,1024] [--iters 7] [--out tests/data/ps]

Brings up one host per rate (one rank each) and, for every size and every server host, runs one
f32 tensor of that size through a parameter_server group pinned to that server (`autosync run`,
no simulated compute: the figure is the exchange itself, `sync_s` of the trial record, median of
--iters). Prints, per (size, server), the measurement beside

  model    the record's predicted iteration: cost::estimate's price of the exchange (pushes side
           by side through the busiest port, each added, then the pulls the same way)
  serial   every message one after another at the slower of its two ends, twice (push, pull):
           what a server that drained one sender's socket at a time would take

and the ratios measured / model and measured / serial. Appends the table to OUT/ps_exchange.log.
Root only (network namespaces); the testbed is always torn down.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTBED = HERE / "testbed.sh"


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def tc_rate(text):
    """A tc rate ("1gbit", "500mbit", "800kbit", "100000000bit") in bits/s."""
    t = text.strip().lower()
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)):
        if t.endswith(unit):
            return float(t[: -len(unit)]) * scale
    raise SystemExit(f"ps_exchange: cannot read the rate '{text}' (e.g. 1gbit, 500mbit)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--autosync", default="build/bin/autosync")
    ap.add_argument("--rates", default="1gbit,500mbit,200mbit,100mbit")
    ap.add_argument("--kib", default="64,256,1024")
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--out", default="tests/data/ps")
    a = ap.parse_args()
    rates = a.rates.split(",")
    for x in rates:
        tc_rate(x)
    sizes = [int(x) for x in a.kib.split(",")]
    if len(rates) < 2 or any(k <= 0 for k in sizes) or a.iters < 1:
        sys.exit("ps_exchange: need two or more --rates, positive --kib and --iters >= 1")
    autosync = str(Path(a.autosync).resolve())
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="autosync-ps-"))
    name = f"px{os.getpid() % 100000}"
    cluster = work / "cluster.json"
    lines = []

    def log(line):
        lines.append(line)
        print(line, flush=True)

    run([str(TESTBED), "down", "--name", name])
    try:
        r = run([str(TESTBED), "up", "--name", name, "--hosts", str(len(rates)), "--ranks-per-host", "1",
                 "--rates", ",".join(rates), "--cluster-out", str(cluster)])
        if r.returncode != 0:
            sys.exit(f"ps_exchange: testbed up failed:\n{r.stdout}")
        beta = [8.0 / tc_rate(x) for x in rates]  # seconds per byte of each host's shaper
        log(f"# ps_exchange {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: hosts at {a.rates}, one rank each, "
            f"{a.iters} iterations (median), one f32 tensor per run on one server")
        log(f"{'KiB':>6} {'server':>7} {'measured':>10} {'model':>10} {'serial':>10} {'meas/model':>11} {'meas/serial':>12}")
        for kib in sizes:
            n = kib * 1024 // 4
            mpath = work / "model.json"
            mpath.write_text(json.dumps({"name": f"one-{kib}kib", "batch_per_device": 1, "forward_flops": 0.0,
                                         "source": "tests/testbed/ps_exchange.py",
                                         "tensors": [{"name": "w", "shape": [n], "dtype": "f32", "backward_flops": 0.0}]}))
            for s in range(len(rates)):
                spath = work / "strategy.json"
                spath.write_text(json.dumps({"name": f"ps{s}", "groups": [{
                    "architecture": "parameter_server", "placement": {"kind": "pinned", "server": s},
                    "fusion": {"cap_bytes": 0}}], "assignments": [{"tensor": "w", "group": 0}]}))
                rec = work / "r.jsonl"
                rec.unlink(missing_ok=True)
                r = run([str(TESTBED), "run", "--name", name, "--", "-np", str(len(rates)), autosync, "run",
                         "--strategy", str(spath), "--model", str(mpath), "--cluster", str(cluster),
                         "--ranks-per-node", "1", "--iters", str(a.iters), "--warmup", "1", "--records", str(rec)],
                        env=dict(os.environ, AUTOSYNC_TIMEOUT_S="60"), timeout=300)
                if r.returncode != 0 or not rec.exists():
                    sys.exit(f"ps_exchange: run failed:\n{r.stdout[-2000:]}")
                x = json.loads(rec.read_text())
                meas = statistics.median(i["sync_s"] for i in x["iterations"])
                model = x["predicted"]["iteration_s"]
                B = n * 4
                serial = 2 * sum(B * max(beta[k], beta[s]) for k in range(len(rates)) if k != s)
                log(f"{kib:>6} {s:>7} {meas * 1e3:>8.2f}ms {model * 1e3:>8.2f}ms {serial * 1e3:>8.2f}ms "
                    f"{meas / model:>11.2f} {meas / serial:>12.2f}")
    finally:
        run([str(TESTBED), "down", "--name", name])
        with open(out / "ps_exchange.log", "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
