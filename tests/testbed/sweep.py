#!/usr/bin/env python3
"""The measured dataset: run many strategies on several testbed shapes and keep the trial records.

    tests/testbed/sweep.py [--autosync build/bin/autosync] [--out tests/data/trials]
                           [--shapes 2x1,4x1,...] [--models resnet50,bert-base,...]
                           [--random N] [--no-baselines] [--seed S] [--iters 3] [--warmup 1]
                           [--compute-fraction F] [--minutes M] [--compressors fp16,bf16,...]

For every shape (hosts x ranks per host at a rate; see SHAPES) it brings a testbed up
(testbed.sh up), and for every model writes the strategies to try with `autosync sample` (the
search's pick, the search's pick for communication alone (autosync-comm: the cluster with
compute too fast to hide any), every baseline, N random draws from the search space, lossy compression allowed
in the draws: every registered compressor, or those --compressors names) for the model scaled to the testbed (--scale, the tensor structure kept: about
0.12 s of ring all-reduce traffic at the slowest link), then runs each strategy with
`autosync run` under the testbed's mpirun and appends its trial record to
OUT/<cluster name>.jsonl. A fraction F of the strategies also runs with simulated backward
compute (--compute-scale chosen so the compute is 0.5x or 1x the measured sync time of the first
strategy run, DDP's when the baselines run), so overlap is in the data too. Each trial is one line of OUT/sweep.log: time, load
averages (/proc/loadavg, the machine is shared), shape, model, strategy, compute scale, exit
status, median sync time, wall time, bytes the shapers counted. The testbed is always torn
down (also on Ctrl-C); a trial that hangs past its timeout is killed and the testbed rebuilt.
Root only (network namespaces).
"""
import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTBED = HERE / "testbed.sh"
# name: (hosts, ranks per host, rates: one for all or one per host)
SHAPES = {
    "2x1": (2, 1, ["500mbit"]),
    "4x1": (4, 1, ["200mbit"]),
    "2x2": (2, 2, ["1gbit"]),
    "4x2": (4, 2, ["500mbit"]),
    "3x2": (3, 2, ["300mbit"]),
    "4x1h": (4, 1, ["1gbit", "500mbit", "200mbit", "100mbit"]),
    "2x2h": (2, 2, ["1gbit", "200mbit"]),
}
# full-size bytes of the zoo models (`autosync models`), to pick the scale
MODELS = {"resnet50": 97.49, "bert-base": 417.64, "vgg16": 527.79, "gpt2": 474.70, "ncf": 25.22}
TARGET_COMM_S = 0.12
TRIAL_TIMEOUT_S = 150


def rate_bits(r):
    r = r.lower()
    for suffix, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)):
        if r.endswith(suffix):
            return float(r[: -len(suffix)]) * mult
    raise SystemExit(f"sweep: bad rate {r}")


def model_scale(model, rates):
    target = min(rate_bits(r) for r in rates) / 8 * TARGET_COMM_S
    target = min(max(target, 1.0e6), 24.0e6)
    return round(target / (MODELS[model] * 2**20), 5)


class Sweep:
    def __init__(self, a):
        self.a = a
        self.out = Path(a.out).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.log_path = self.out / "sweep.log"
        self.name = None
        self.work = Path(tempfile.mkdtemp(prefix="autosync-sweep-"))
        self.deadline = time.monotonic() + a.minutes * 60 if a.minutes > 0 else None
        self.trials = 0
        self.failures = 0
        self.rng = random.Random(a.seed)

    def log(self, line):
        with open(self.log_path, "a") as f:
            f.write(line + "\n")
        print(line, flush=True)

    def testbed(self, *args, check=True):
        r = subprocess.run([str(TESTBED), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"testbed.sh {' '.join(args)} failed:\n{r.stdout}")
        return r.stdout

    def up(self, shape):
        hosts, rph, rates = SHAPES[shape]
        self.name = f"sw{os.getpid() % 100000}"
        self.testbed("down", "--name", self.name, check=False)
        args = ["up", "--name", self.name, "--hosts", str(hosts), "--ranks-per-host", str(rph),
                "--cluster-out", str(self.work / "cluster.json")]
        args += ["--rates", ",".join(rates)] if len(rates) > 1 else ["--rate", rates[0]]
        out = self.testbed(*args)
        link = [l for l in out.splitlines() if "achieved" in l]
        cluster = json.load(open(self.work / "cluster.json"))
        self.log(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} up {cluster['name']}: "
                 + (link[0].replace("testbed: ", "") if link else "(no link measurement)"))
        return cluster["name"]

    def down(self):
        if self.name:
            self.testbed("down", "--name", self.name, check=False)
            self.name = None

    def strategies(self, model, scale, seed):
        d = self.work / f"s-{model}"
        subprocess.run(["rm", "-rf", str(d)], check=True)
        base = [self.a.autosync, "sample", "--model", model, "--scale", str(scale), "--cluster",
                str(self.work / "cluster.json"), "--out-dir", str(d), "--seed", str(seed)]
        files = []
        if not self.a.no_baselines:
            r = subprocess.run(base + ["--count", "0", "--baselines", "--search"], stdout=subprocess.PIPE, text=True, check=True)
            files += r.stdout.split()
            files = files[-1:] + files[:-1]  # the search's pick first
            # the search's pick for communication alone: the same cluster with compute too fast to
            # hide anything, the regime of the --compute-scale 0 runs
            c = json.load(open(self.work / "cluster.json"))
            for n in c["nodes"]:
                n["device_flops"] = 1e18
            json.dump(c, open(self.work / "cluster-comm.json", "w"))
            comm = base[:]
            comm[comm.index(str(self.work / "cluster.json"))] = str(self.work / "cluster-comm.json")
            comm[comm.index(str(d))] = str(d / "comm")
            r = subprocess.run(comm + ["--count", "0", "--search"], stdout=subprocess.PIPE, text=True, check=True)
            (d / "comm" / "autosync.json").rename(d / "autosync-comm.json")
            files.insert(1, str(d / "autosync-comm.json"))
            ddp = [f for f in files if f.endswith("baseline-ddp.json")]
            files = ddp + [f for f in files if f not in ddp]  # DDP first: its sync time sets the compute scale
        if self.a.random > 0:
            lossy = ["--allow-lossy"] + (["--compressors", self.a.compressors] if self.a.compressors else [])
            r = subprocess.run(base + ["--count", str(self.a.random)] + lossy, stdout=subprocess.PIPE, text=True, check=True)
            files += r.stdout.split()
        return files

    def trial(self, shape, cluster_name, model, scale, strategy, compute_scale):
        if self.deadline and time.monotonic() > self.deadline:
            raise TimeoutError
        records = self.out / f"{cluster_name}.jsonl"
        tmp_records = self.work / "one.jsonl"
        tmp_records.unlink(missing_ok=True)
        counters = self.work / "counters.txt"
        cmd = [str(TESTBED), "run", "--name", self.name, "--counters", str(counters), "--",
               self.a.autosync, "run", "--strategy", strategy, "--model", model, "--scale", str(scale),
               "--cluster", str(self.work / "cluster.json"), "--iters", str(self.a.iters), "--warmup", str(self.a.warmup),
               "--compute-scale", f"{compute_scale:.6g}", "--seed", str(self.rng.randrange(1, 1 << 30)),
               "--records", str(tmp_records)]
        load = open("/proc/loadavg").read().split()[:3]
        t0 = time.monotonic()
        env = dict(os.environ, AUTOSYNC_TIMEOUT_S="60")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env)
        try:
            output, _ = p.communicate(timeout=TRIAL_TIMEOUT_S)
            status = str(p.returncode)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            output, _ = p.communicate()
            status = "timeout"
        wall = time.monotonic() - t0
        sync = "-"
        if status == "0" and tmp_records.exists():
            line = tmp_records.read_text()
            rec = json.loads(line)
            sync = f"{statistics.median(it['sync_s'] for it in rec['iterations']):.6f}"
            with open(records, "a") as f:  # one write: a whole line
                f.write(line)
            self.trials += 1
        else:
            self.failures += 1
            err = [l for l in output.splitlines() if "error" in l.lower()]
            what = err[0] if err else (output.strip().splitlines() or ["no output"])[-1]
            self.log(f"#   failed ({status}): {what.replace(str(self.work), '<work>')}")
        shaped = " ".join(open(counters).read().split()) if counters.exists() and status != "timeout" else "-"
        self.log(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} load {' '.join(load)} {shape} {model}@{scale} "
                 f"{Path(strategy).stem} compute_scale={compute_scale:.4g} status={status} sync_median_s={sync} wall_s={wall:.2f} "
                 f"shaped_bytes[{shaped}]")
        if status == "timeout":
            self.down()
            self.up(shape)
        counters.unlink(missing_ok=True)
        return float(sync) if sync != "-" else None, tmp_records

    def run(self):
        a = self.a
        self.log(f"# sweep {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: shapes {a.shapes}, models {a.models}, "
                 f"random {a.random}, baselines {not a.no_baselines}, seed {a.seed}, iters {a.iters}, warmup {a.warmup}, "
                 f"compute fraction {a.compute_fraction}, compressors {a.compressors or 'all'}; {os.cpu_count()} cores")
        try:
            for shape in a.shapes.split(","):
                if shape not in SHAPES:
                    raise SystemExit(f"sweep: unknown shape '{shape}' (known: {', '.join(SHAPES)})")
                cluster_name = self.up(shape)
                for model in a.models.split(","):
                    if model not in MODELS:
                        raise SystemExit(f"sweep: unknown model '{model}' (known: {', '.join(MODELS)})")
                    scale = model_scale(model, SHAPES[shape][2])
                    files = self.strategies(model, scale, a.seed)
                    compute_unit = None  # seconds of simulated compute at --compute-scale 1
                    ref_sync = None
                    for f in files:
                        sync, rec_path = self.trial(shape, cluster_name, model, scale, f, 0.0)
                        if sync is not None and compute_unit is None:
                            rec = json.loads(rec_path.read_text())
                            compute_unit = rec["predicted"]["iteration_s"] - rec["predicted"]["exposed_s"]
                            ref_sync = sync
                        if sync is not None and compute_unit and self.rng.random() < a.compute_fraction:
                            cs = ref_sync * self.rng.choice([0.5, 1.0]) / compute_unit
                            self.trial(shape, cluster_name, model, scale, f, cs)
                self.down()
        except TimeoutError:
            self.log(f"# time budget of {a.minutes} min reached")
        finally:
            self.down()
            subprocess.run(["rm", "-rf", str(self.work)])
            self.log(f"# done: {self.trials} records, {self.failures} failed trials")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = HERE.parent.parent
    ap.add_argument("--autosync", default=str(root / "build" / "bin" / "autosync"))
    ap.add_argument("--out", default=str(root / "tests" / "data" / "trials"))
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--random", type=int, default=4, help="random strategies per model and shape")
    ap.add_argument("--no-baselines", action="store_true", help="random draws only (no baselines, no search pick)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--compute-fraction", type=float, default=0.3)
    ap.add_argument("--minutes", type=float, default=0, help="stop after this many minutes (0: no limit)")
    ap.add_argument("--compressors", default="",
                    help="the lossy compressors random draws may use, comma-separated (default: every registered one; "
                         "a lossy trial first runs its compressors' guarantee checks, 15-70 s over the testbed's links)")
    a = ap.parse_args()
    a.autosync = str(Path(a.autosync).resolve())
    if not os.access(a.autosync, os.X_OK):
        raise SystemExit(f"sweep: no autosync command at {a.autosync} (build the autosync_cli target, or pass --autosync)")
    if os.geteuid() != 0:
        raise SystemExit("sweep: needs root (the testbed uses network namespaces)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    Sweep(a).run()


if __name__ == "__main__":
    main()
