#!/usr/bin/env python3
"""Autotune on testbed cases: the tuned strategy against the best baseline, with and without transfer.

    tests/testbed/tune_cases.py [--autosync build/bin/autosync] [--out tests/data/tune]
                                [--cases 2x2:resnet50,4x1h:ncf,...] [--budget 30] [--per-round 8]
                                [--iters 3] [--warmup 1] [--recheck 4] [--lossless | --compressors fp16,bf16]
                                [--source-dir tests/data/trials] [--modes cold,transfer,pick]

For every case (a testbed shape of sweep.py's SHAPES and a zoo model, scaled as the sweep scales
it) it brings the testbed up and runs `autosync tune --runner testbed:NAME` twice:

  cold      no records but the target's own: round 0 runs every baseline, later rounds rank
            with a correction fitted on the trials so far
  transfer  the same, with the sweep's records of every other (model, cluster) joining every
            fit (--source; `autosync tune` drops the target's own group from the source)

  pick      no tuning: `autosync optimize`'s default pick (no trials, the embedded learned
            correction re-ranking the search's best candidates; written by `autosync sample
            --search --compute-scale 0`: lossless, as `optimize` without --allow-lossy, and for
            the runs' own setting, no simulated compute) against every baseline, each measured --recheck times, alternating, 5
            iterations per run; speedup = the best baseline's median / the pick's median. A pick
            that is a baseline's own strategy (same groups and assignments) is measured once, as
            that baseline ("= name" in its row). This is the figure a user who never runs a trial
            gets.

Lossy compression is in the proposals unless --lossless (--compressors limits it to those named,
`autosync tune --compressors`; fp16,bf16 is AutoSync's own space): AutoSync's space had its
fp16 compressors too. Records go to OUT/<cluster>-<model>-<mode>.jsonl (a rerun resumes them).

Then it re-measures the best tuned strategy and the best baseline of each mode, alternating,
--recheck times each (5 iterations per run), so the reported speedup is not the best-of-many
luck of the tuning runs. Prints one table (also appended to OUT/tune.log):
  case, mode, trials, best baseline (name, recheck median), tuned (recheck median),
  speedup = baseline / tuned, trials until the best-so-far reached 95 % of the final speedup
  over the best baseline (AutoSync's anchor: up to 1.6x over hand-optimized strategies).
Root only (network namespaces); the testbed is always torn down.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sweep import SHAPES, MODELS, model_scale  # noqa: E402

TESTBED = HERE / "testbed.sh"
DEFAULT_CASES = "2x2:resnet50,4x1h:ncf,4x1:bert-base,3x2:vgg16,2x2h:gpt2"


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def median_time(rec):
    """A trial's median iteration_s: with no simulated compute, the whole synchronization. Not
    sync_s: that is the communication thread's time in buckets only, without the readiness rounds
    a plan with a priority group runs before every launch (on the 2x2 1 Gb/s + 200 Mb/s testbed
    byteps' per-tensor priority plan measured sync_s 107 ms in an iteration of 223 ms)."""
    return statistics.median(it["iteration_s"] for it in rec["iterations"])


def read_records(path):
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                out.append(json.loads(line))
    return out


class Cases:
    def __init__(self, a):
        self.a = a
        self.out = Path(a.out).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="autosync-tune-"))
        self.name = None
        self.rows = []
        self.speedups = {}  # mode: [speedup of each case]

    def log(self, line):
        with open(self.out / "tune.log", "a") as f:
            f.write(line + "\n")
        print(line, flush=True)

    def up(self, shape):
        hosts, rph, rates = SHAPES[shape]
        self.name = f"tc{os.getpid() % 100000}"
        run([str(TESTBED), "down", "--name", self.name])
        args = [str(TESTBED), "up", "--name", self.name, "--hosts", str(hosts), "--ranks-per-host", str(rph),
                "--cluster-out", str(self.work / "cluster.json")]
        args += ["--rates", ",".join(rates)] if len(rates) > 1 else ["--rate", rates[0]]
        r = run(args)
        if r.returncode != 0:
            raise SystemExit(f"tune_cases: testbed up failed:\n{r.stdout}")
        return json.load(open(self.work / "cluster.json"))["name"], hosts * rph, rph

    def down(self):
        if self.name:
            run([str(TESTBED), "down", "--name", self.name])
            self.name = None

    def measure(self, strategy, model, scale, np_, rph):
        path = self.work / "strategy.json"
        path.write_text(json.dumps(strategy))
        rec_path = self.work / "recheck.jsonl"
        rec_path.unlink(missing_ok=True)
        r = run([str(TESTBED), "run", "--name", self.name, "--", "-np", str(np_), self.a.autosync, "run",
                 "--strategy", str(path), "--model", model, "--scale", str(scale), "--cluster", str(self.work / "cluster.json"),
                 "--ranks-per-node", str(rph), "--iters", "5", "--warmup", "1", "--records", str(rec_path)],
                env=dict(os.environ, AUTOSYNC_TIMEOUT_S="60"), timeout=300)
        if r.returncode != 0 or not rec_path.exists():
            raise SystemExit(f"tune_cases: recheck run failed:\n{r.stdout[-2000:]}")
        return median_time(json.loads(rec_path.read_text()))

    def pick(self, shape, model, scale, np_, rph):
        d = self.work / f"pick-{model}"
        subprocess.run(["rm", "-rf", str(d)], check=True)
        t0 = time.monotonic()
        r = run([self.a.autosync, "sample", "--model", model, "--scale", str(scale), "--cluster", str(self.work / "cluster.json"),
                 "--out-dir", str(d), "--count", "0", "--baselines", "--search", "--compute-scale", "0"])
        # lossless, as `optimize` by default; for no compute, as the runs below simulate none
        if r.returncode != 0:
            raise SystemExit(f"tune_cases: sample failed:\n{r.stdout[-2000:]}")
        files = [Path(f) for f in r.stdout.split()]
        strategies = {f.stem: json.loads(f.read_text()) for f in files}
        # a pick that is a baseline's strategy (the same groups and assignments) is that baseline:
        # it is measured once, as the baseline, and its speedup over it is 1 (two measurements of
        # one strategy on this 2-core testbed differ by up to 25 %, which is noise, not a result)
        same = next((k for k, st in strategies.items() if k.startswith("baseline-") and
                     (st["groups"], st["assignments"]) == (strategies["autosync"]["groups"], strategies["autosync"]["assignments"])), None)
        measured = {k: st for k, st in strategies.items() if not (same and k == "autosync")}
        times = {k: [] for k in measured}
        for _ in range(self.a.recheck):
            for k, st in measured.items():
                times[k].append(self.measure(st, model, scale, np_, rph))
        med = {k: statistics.median(v) for k, v in times.items()}
        if same:
            med["autosync"] = med[same]
        bases = {k: v for k, v in med.items() if k.startswith("baseline-")}
        best_base = min(bases, key=bases.get)
        mp, mb = med["autosync"], bases[best_base]
        groups = strategies["autosync"].get("groups", [])

        def aspect(g):
            t = g.get("topology", "ring")
            t = t if isinstance(t, str) else f"{t['kind']}<{t.get('intra', '')},{t.get('inter', '')}>"
            cap = g.get("fusion", {}).get("cap_bytes", 0)
            return f"{g.get('architecture', 'all_reduce')}/{t}/{cap >> 20 if cap < 1 << 62 else 'inf'}MiB"

        row = (f"{shape:5} {model:9} pick     {len(groups):3} groups [{' '.join(aspect(g) for g in groups[:3])}{' ...' if len(groups) > 3 else ''}]"
               + (f" = {same[9:]}" if same else "") + f"  best baseline {best_base[9:]:22} {mb * 1e3:8.1f} ms  "
               f"pick {mp * 1e3:8.1f} ms  speedup {mb / mp:4.2f}x  (every baseline: "
               + ", ".join(f"{k[9:]} {v * 1e3:.1f}" for k, v in sorted(bases.items(), key=lambda kv: kv[1]))
               + f" ms)  [{time.monotonic() - t0:5.0f} s]")
        self.rows.append(row)
        self.speedups.setdefault("pick", []).append(mb / mp)
        self.log(row)

    def case(self, shape, model):
        cluster, np_, rph = self.up(shape)
        scale = model_scale(model, SHAPES[shape][2])
        sources = sorted(str(p) for p in Path(self.a.source_dir).glob("*.jsonl"))
        for mode in self.a.modes.split(","):
            if mode == "pick":
                self.pick(shape, model, scale, np_, rph)
                continue
            records = self.out / f"{cluster}-{model}-{mode}.jsonl"
            cmd = [self.a.autosync, "tune", "--model", model, "--scale", str(scale), "--cluster", str(self.work / "cluster.json"),
                   "--np", str(np_), "--ranks-per-node", str(rph), "--records", str(records), "--runner", f"testbed:{self.name}",
                   "--budget", str(self.a.budget), "--per-round", str(self.a.per_round), "--iters", str(self.a.iters),
                   "--warmup", str(self.a.warmup)]
            if not self.a.lossless:
                cmd.append("--allow-lossy")
                if self.a.compressors:
                    cmd += ["--compressors", self.a.compressors]
            if mode == "transfer":
                cmd += ["--source", *sources]
            elif mode != "cold":
                raise SystemExit(f"tune_cases: unknown mode '{mode}' (cold, transfer, pick)")
            t0 = time.monotonic()
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=dict(os.environ, AUTOSYNC_TESTBED=str(TESTBED), AUTOSYNC_TIMEOUT_S="60"))
            tail = [l for l in r.stdout.splitlines() if l.startswith(("best", "autosync tune", "transfer"))]
            for l in tail:
                self.log(f"#   {l}")
            if r.returncode != 0:
                self.log(f"#   tune failed ({r.returncode}): {r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ''}")
                continue
            recs = read_records(records)
            base = [x for x in recs if x["strategy"]["name"].startswith("baseline:")]
            if not base:
                self.log("#   no baseline ran")
                continue
            best_base = min(base, key=median_time)
            best = min(recs, key=median_time)
            # trials until 95 % of the final speedup (in the order run)
            b0 = median_time(best_base)
            final = b0 / median_time(best)
            so_far, reach = float("inf"), len(recs)
            for i, x in enumerate(recs):
                so_far = min(so_far, median_time(x))
                if b0 / so_far >= 1.0 + 0.95 * (final - 1.0) - 1e-12:
                    reach = i + 1
                    break
            tb, tt = [], []
            for _ in range(self.a.recheck):
                tb.append(self.measure(best_base["strategy"], model, scale, np_, rph))
                tt.append(self.measure(best["strategy"], model, scale, np_, rph))
            mb, mt = statistics.median(tb), statistics.median(tt)
            row = (f"{shape:5} {model:9} {mode:8} trials {len(recs):3}  tuning: baseline {b0 * 1e3:8.1f} ms  best {median_time(best) * 1e3:8.1f} ms "
                   f"({final:4.2f}x, 95 % after {reach:3} trials)  recheck: {best_base['strategy']['name'][9:]:22} {mb * 1e3:8.1f} ms  "
                   f"tuned {mt * 1e3:8.1f} ms  speedup {mb / mt:4.2f}x  [{time.monotonic() - t0:5.0f} s]")
            self.rows.append(row)
            self.speedups.setdefault(mode, []).append(mb / mt)
            self.log(row)
        self.down()

    def go(self):
        a = self.a
        self.log(f"# tune_cases {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: cases {a.cases}, budget {a.budget}, "
                 f"per round {a.per_round}, iters {a.iters}, recheck {a.recheck}, lossy {'no' if a.lossless else (a.compressors or 'yes')} (pick: no), "
                 f"modes {a.modes}; load {' '.join(open('/proc/loadavg').read().split()[:3])}; {os.cpu_count()} cores")
        try:
            for c in a.cases.split(","):
                shape, _, model = c.partition(":")
                if shape not in SHAPES or model not in MODELS:
                    raise SystemExit(f"tune_cases: bad case '{c}' (SHAPE:MODEL, shapes {', '.join(SHAPES)}; models {', '.join(MODELS)})")
                self.case(shape, model)
        finally:
            self.down()
            subprocess.run(["rm", "-rf", str(self.work)])
        geo = [f"{m}: geomean {math.exp(statistics.fmean(math.log(x) for x in v)):.3f}x, min {min(v):.3f}x over {len(v)} cases"
               for m, v in self.speedups.items()]
        self.log("# summary\n" + "\n".join(self.rows + geo))


def main():
    root = HERE.parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--autosync", default=str(root / "build" / "bin" / "autosync"))
    ap.add_argument("--out", default=str(root / "tests" / "data" / "tune"))
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--per-round", type=int, default=8)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--recheck", type=int, default=4)
    ap.add_argument("--lossless", action="store_true", help="no lossy compression in the proposals")
    ap.add_argument("--compressors", default="", help="the lossy compressors the proposals may use (default: all)")
    ap.add_argument("--source-dir", default=str(root / "tests" / "data" / "trials"))
    ap.add_argument("--modes", default="cold,transfer", help="any of cold, transfer, pick")
    a = ap.parse_args()
    a.autosync = str(Path(a.autosync).resolve())
    if not os.access(a.autosync, os.X_OK):
        raise SystemExit(f"tune_cases: no autosync command at {a.autosync} (build the autosync_cli target, or pass --autosync)")
    if os.geteuid() != 0:
        raise SystemExit("tune_cases: needs root (network namespaces); see tests/testbed/testbed.sh check")
    Cases(a).go()


if __name__ == "__main__":
    main()
