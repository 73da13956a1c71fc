#!/usr/bin/env python3
"""The compression family on the testbed against PyTorch's own compression hooks, same hosts, same tensors.

    tests/testbed/compression_peers.py [--autosync build/bin/autosync] [--python /usr/bin/python3]
                                       [--hosts 4] [--rate 300mbit] [--model resnet50] [--scale 1]
                                       [--iters 5] [--warmup 2] [--runs 3] [--out tests/data/compression]
                                       [--only none,fp16,...]

Brings up a testbed of --hosts hosts, one rank each, at --rate, and times one iteration's gradient
synchronization of --model (a zoo model of real structure, full size by default) with:

  autosync  DDP's layout (baselines::ddp) in buckets of --bucket-mib (the first as large) with each
            compressor on every group, run by `autosync run` (no simulated compute: every gradient is ready at
            once, so the figure is the synchronization itself, `sync_s` of the trial record):
            none, fp16, int8, top-k 1 %, PowerSGD rank 1 and 4 (compressing from the first
            iteration), Accordion over PowerSGD rank 4 <-> 1
  PyTorch   DistributedDataParallel (Debian's python3-torch, gloo) on the same tensors (the model
            JSON `autosync sample --model-out` writes), bucket_cap_mb = --bucket-mib, with its
            default all-reduce hook,
            fp16_compress_hook and powerSGD_hook at rank 1 and 4 (tests/bench/ddp_torch.py
            --init-method: one process per host, launched by the testbed's mpirun); its `span`
            (first bucket launched -> last bucket reduced) is the synchronization, its `wall`
            adds the trivial forward and backward

Both sides use one bucket for the whole model by default (--bucket-mib 1024, the first bucket as
large): PyTorch 1.13's powerSGD_hook over gloo with more than one bucket (DDP's 25 MiB, or even
DDP's 1 MiB first bucket and one more) issues the collectives of different buckets in a
different order on different ranks and fails (gloo: "op.preamble.length <= op.nbytes", or a
peer closing the connection); with no compute to overlap, bucketing changes little else here.

Every variant runs --runs times, alternating, and the medians are printed with the PyTorch peer
of each autosync compressor beside it (ratio = PyTorch span / autosync sync: > 1, autosync is
faster). One table, also appended to OUT/compression.log. Root only (network namespaces); the
testbed is always torn down. PyTorch rows are skipped (and said so) when --python has no torch.
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
DDP_TORCH = HERE.parent / "bench" / "ddp_torch.py"
HOST0 = "198.18.0.1"  # testbed.sh: host 0's address on the bridge

# label: (the compression JSON value on every group, the PyTorch hook beside it or None)
VARIANTS = {
    "none": ("none", ("allreduce", 1)),
    "fp16": ("fp16", ("fp16", 1)),
    "int8": ("int8", None),
    "topk1%": ({"kind": "topk", "density": 0.01}, None),
    "powersgd1": ({"kind": "powersgd", "rank": 1, "start_iteration": 0}, ("powersgd", 1)),
    "powersgd4": ({"kind": "powersgd", "rank": 4, "start_iteration": 0}, ("powersgd", 4)),
    "accordion": ({"kind": "accordion_powersgd", "critical_rank": 4, "rank": 1}, None),
}


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


class Peers:
    def __init__(self, a):
        self.a = a
        self.out = Path(a.out).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="autosync-peers-"))
        self.name = f"cp{os.getpid() % 100000}"
        self.port = 29500

    def log(self, line):
        with open(self.out / "compression.log", "a") as f:
            f.write(line + "\n")
        print(line, flush=True)

    def up(self):
        run([str(TESTBED), "down", "--name", self.name])
        r = run([str(TESTBED), "up", "--name", self.name, "--hosts", str(self.a.hosts), "--ranks-per-host", "1",
                 "--rate", self.a.rate, "--cluster-out", str(self.work / "cluster.json")])
        if r.returncode != 0:
            raise SystemExit(f"compression_peers: testbed up failed:\n{r.stdout}")

    def down(self):
        run([str(TESTBED), "down", "--name", self.name])

    def strategies(self):
        d = self.work / "sample"
        r = run([self.a.autosync, "sample", "--model", self.a.model, "--scale", str(self.a.scale), "--cluster",
                 str(self.work / "cluster.json"), "--out-dir", str(d), "--count", "0", "--baselines",
                 "--model-out", str(self.work / "model.json")])
        if r.returncode != 0:
            raise SystemExit(f"compression_peers: sample failed:\n{r.stdout[-2000:]}")
        ddp = json.loads((d / "baseline-ddp.json").read_text())
        out = {}
        for label, (value, _) in VARIANTS.items():
            s = json.loads(json.dumps(ddp))
            s["name"] = "ddp-" + label
            for g in s["groups"]:
                g["compression"] = value
                g["fusion"] = {"cap_bytes": self.a.bucket_mib << 20, "first_cap_bytes": self.a.bucket_mib << 20}
            out[label] = s
        return out

    def autosync(self, strategy):
        path = self.work / "strategy.json"
        path.write_text(json.dumps(strategy))
        rec = self.work / "record.jsonl"
        rec.unlink(missing_ok=True)
        r = run([str(TESTBED), "run", "--name", self.name, "--", "-np", str(self.a.hosts), self.a.autosync, "run",
                 "--strategy", str(path), "--model", str(self.work / "model.json"), "--cluster", str(self.work / "cluster.json"),
                 "--iters", str(self.a.iters), "--warmup", str(self.a.warmup), "--records", str(rec)],
                env=dict(os.environ, AUTOSYNC_TIMEOUT_S="120"), timeout=900)
        if r.returncode != 0 or not rec.exists():
            raise SystemExit(f"compression_peers: autosync run of {strategy['name']} failed:\n{r.stdout[-2000:]}")
        its = json.loads(rec.read_text().splitlines()[-1])["iterations"]
        return statistics.median(it["sync_s"] for it in its)

    def torch(self, hook, rank):
        self.port += 1  # a fresh rendezvous port per run (no TIME_WAIT clash)
        r = run([str(TESTBED), "run", "--name", self.name, "--", "-np", str(self.a.hosts), self.a.python, str(DDP_TORCH),
                 "--model-json", str(self.work / "model.json"), "--iters", str(self.a.iters), "--warmup", str(self.a.warmup),
                 "--hook", hook, "--powersgd-rank", str(rank), "--bucket-cap-mb", str(self.a.bucket_mib), "--first-bucket-mb", str(self.a.bucket_mib), "--init-method", f"tcp://{HOST0}:{self.port}", "--ifname", "tb0"],
                timeout=900)
        line = next((l for l in r.stdout.splitlines() if l.startswith("result ")), None)
        if r.returncode != 0 or line is None:
            raise SystemExit(f"compression_peers: PyTorch {hook} run failed:\n{r.stdout[-2000:]}")
        kv = dict(x.split("=", 1) for x in line.split()[1:])
        return float(kv["sync_ms"]) / 1e3, float(kv["wall_ms"]) / 1e3

    def go(self):
        a = self.a
        labels = a.only.split(",") if a.only else list(VARIANTS)
        for l in labels:
            if l not in VARIANTS:
                raise SystemExit(f"compression_peers: unknown variant '{l}' (known: {', '.join(VARIANTS)})")
        has_torch = run([a.python, "-c", "import torch.distributed as d; assert d.is_gloo_available()"]).returncode == 0
        self.log(f"# compression_peers {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: {a.hosts} hosts x 1 rank at {a.rate}, "
                 f"{a.model} (scale {a.scale}), buckets of {a.bucket_mib} MiB, {a.iters} iterations after {a.warmup}, {a.runs} runs each alternating; "
                 f"load {' '.join(open('/proc/loadavg').read().split()[:3])}; {os.cpu_count()} cores"
                 + ("" if has_torch else f"; {a.python} has no torch with gloo: PyTorch rows skipped"))
        t0 = time.monotonic()
        try:
            self.up()
            strategies = self.strategies()
            mine = {l: [] for l in labels}
            peers = {}
            for l in labels:
                if has_torch and VARIANTS[l][1]:
                    peers.setdefault(VARIANTS[l][1], ([], []))
            for _ in range(a.runs):
                for l in labels:
                    mine[l].append(self.autosync(strategies[l]))
                for (hook, rank), (span, wall) in peers.items():
                    s, w = self.torch(hook, rank)
                    span.append(s)
                    wall.append(w)
        finally:
            self.down()
            subprocess.run(["rm", "-rf", str(self.work)])
        self.log(f"{'compressor':12} {'autosync sync ms':>17} {'x none':>7}   {'PyTorch peer':22} {'span ms':>9} {'wall ms':>9} {'ratio':>6}")
        base = statistics.median(mine["none"]) if "none" in mine else None
        for l in labels:
            m = statistics.median(mine[l])
            row = f"{l:12} {m * 1e3:17.1f} {(base / m if base else float('nan')):6.2f}x"
            peer = VARIANTS[l][1]
            if peer and peer in peers:
                span, wall = (statistics.median(v) for v in peers[peer])
                name = {"allreduce": "DDP allreduce_hook", "fp16": "fp16_compress_hook"}.get(peer[0], f"powerSGD_hook rank {peer[1]}")
                row += f"   {name:22} {span * 1e3:9.1f} {wall * 1e3:9.1f} {span / m:5.2f}x"
            self.log(row)
        self.log(f"# {time.monotonic() - t0:.0f} s; ratio = PyTorch span / autosync sync (> 1: autosync faster); x none = none / this")


def main():
    root = HERE.parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--autosync", default=str(root / "build" / "bin" / "autosync"))
    ap.add_argument("--python", default="/usr/bin/python3", help="a Python with PyTorch (Debian's python3-torch)")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--rate", default="300mbit")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bucket-mib", type=int, default=1024, help="bucket cap of both sides, the first bucket's too")
    ap.add_argument("--only", default="", help="comma-separated variants (default: all)")
    ap.add_argument("--out", default=str(root / "tests" / "data" / "compression"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("compression_peers: needs root (network namespaces)")
    if a.hosts < 2 or a.iters < 1 or a.warmup < 2 or a.runs < 1 or a.bucket_mib < 1:
        raise SystemExit("compression_peers: --hosts >= 2, --iters >= 1, --warmup >= 2 (PowerSGD's hook compresses from iteration 2), --runs >= 1, --bucket-mib >= 1")
    Peers(a).go()


if __name__ == "__main__":
    main()
