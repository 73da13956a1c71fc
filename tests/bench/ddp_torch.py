#!/usr/bin/env python3
"""PyTorch DistributedDataParallel itself on the gradients of an autosync model file.

    python3 tests/bench/ddp_torch.py --model-json DIR/resnet50.json [--model-json ...]
                                     [--ranks 4] [--iters 10] [--warmup 2] [--bucket-cap-mb 25]
                                     [--first-bucket-mb 1]
                                     [--hook allreduce|fp16|powersgd] [--powersgd-rank R]
                                     [--init-method tcp://HOST:PORT --ifname IF]

The reference point for tests/bench/mpi_models.cpp: the same tensors (the model JSON that
bench_mpi_models --model-out writes with io::save_model_file), the same number of ranks on
this host, PyTorch's own DDP with its defaults (gloo backend on the CPU, bucket_cap_mb=25,
first bucket 1 MiB), no training compute beyond what is needed to produce the gradients.

    rank r:  module = one nn.Parameter per model tensor, in the file's (forward) order
             loss   = (r + 1) * sum(p.sum() for p in params)   -> every gradient is r + 1
             DDP(module).backward: autograd makes the gradients back to front; DDP's reducer
             fills 25 MiB buckets and all-reduces each as it fills (gloo, asynchronous)

             backward ......[b0 launched]....[b1 launched].......| backward() returns
             gloo            [=== all-reduce b0 ===][=== b1 ===]  (after the last bucket)
                            |<------------------ span ----------->|

Per iteration and rank: `wall` (barrier, then forward + backward, which DDP ends only after
its last bucket is reduced) and `span` (from the first bucket's launch to the last bucket's
completion, timed by a communication hook that is DDP's default all-reduce hook plus two
clock reads). `compute` is the same forward + backward under ddp.no_sync() (no reduction),
so wall - compute is DDP's exposed communication. An iteration's figure is the max over
ranks; printed are medians over --iters iterations after --warmup untimed ones. The first
iteration checks every reduced gradient: the average of r + 1 over the ranks, (p + 1) / 2.

--hook picks DDP's communication hook: PyTorch's own default all-reduce (allreduce),
fp16_compress_hook (fp16) or powerSGD_hook (powersgd: PowerSGDState with rank --powersgd-rank,
error feedback and warm start, min_compression_rate 2, compression from iteration 2, so the
warm-up iterations already compress when --warmup >= 2); each is timed by the same wrapper. The
first iteration's check holds for all three: PowerSGD has not started yet (plain all-reduce),
and fp16 carries (r + 1) / p exactly.

With --init-method the ranks are not spawned here: this process is one rank of a job another
launcher started (mpirun: OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE; torchrun: RANK and
WORLD_SIZE), rendezvousing at the given address over --ifname (tests/testbed/compression_peers.py
runs it on the testbed's hosts this way).

Output: a table, and one line per model for tests/bench/run-mpi-benchmarks.sh:
    result model=resnet50 strategy=torch-ddp[-fp16|-powersgd<R>] wall_ms=... sync_ms=<span> compute_ms=... buckets=... bytes=...
Exit status: 0; 1 for a wrong reduction; 2 for bad arguments or a model DDP cannot take here
(sparse or non-f32 tensors); 3 when this interpreter has no torch.distributed with gloo.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-json", action="append", required=True, help="model file written by io::save_model_file")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP's bucket_cap_mb (default: DDP's own, 25)")
    ap.add_argument("--first-bucket-mb", type=float, default=1.0,
                    help="DDP's first bucket (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES; default: DDP's own, 1)")
    ap.add_argument("--port", type=int, default=0, help="rendezvous port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--hook", choices=("allreduce", "fp16", "powersgd"), default="allreduce",
                    help="DDP communication hook: the default all-reduce, fp16_compress_hook or powerSGD_hook")
    ap.add_argument("--powersgd-rank", type=int, default=1, help="PowerSGD's matrix_approximation_rank")
    ap.add_argument("--init-method", default="", help="join a launched job: tcp://HOST:PORT of rank 0 (ranks from the launcher)")
    ap.add_argument("--ifname", default="", help="with --init-method: the network interface gloo uses")
    a = ap.parse_args(argv)
    if a.powersgd_rank < 1:
        ap.error("--powersgd-rank must be >= 1")
    if a.ranks < 1:
        ap.error("--ranks must be >= 1")
    if a.iters < 1 or a.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")
    return a


def load_model(path):
    """(name, [(tensor name, shape)], bytes) of an autosync model file; dense f32 tensors only."""
    with open(path) as f:
        spec = json.load(f)
    tensors, total = [], 0
    for i, t in enumerate(spec.get("tensors", [])):
        field = "%s: tensors[%d]" % (path, i)
        if t.get("sparse", False):
            raise ValueError(field + ".sparse: DDP here takes dense gradients only")
        if t.get("dtype", "f32") != "f32":
            raise ValueError(field + ".dtype: only f32 is supported, got " + str(t.get("dtype")))
        shape = [int(d) for d in t["shape"]]
        if not shape or any(d < 1 for d in shape):
            raise ValueError(field + ".shape: must be a non-empty list of positive sizes")
        n = 1
        for d in shape:
            n *= d
        total += 4 * n
        tensors.append((t["name"], shape))
    if not tensors:
        raise ValueError(path + ": tensors: the model has none")
    return os.path.splitext(os.path.basename(path))[0], tensors, total


class HookState:
    def __init__(self, world, inner_hook=None, inner_state=None):
        self.world = world
        self.inner_hook = inner_hook  # a PyTorch hook to time (None: timed_allreduce_hook's own)
        self.inner_state = inner_state
        self.reset()

    def reset(self):
        self.first = None
        self.last = None
        self.calls = 0


def timed_allreduce_hook(state, bucket):
    """torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook plus timestamps."""
    import torch.distributed as dist

    now = time.perf_counter()
    if state.first is None:
        state.first = now
    state.calls += 1
    tensor = bucket.buffer().div_(state.world)
    fut = dist.all_reduce(tensor, async_op=True).get_future()

    def done(f):
        state.last = time.perf_counter()
        return f.value()[0]

    return fut.then(done)


def timed_hook(state, bucket):
    """PyTorch's own hook (fp16_compress_hook, powerSGD_hook) between the same two clock reads."""
    now = time.perf_counter()
    if state.first is None:
        state.first = now
    state.calls += 1
    fut = state.inner_hook(state.inner_state, bucket)

    def done(f):
        state.last = time.perf_counter()
        v = f.value()
        return v[0] if isinstance(v, list) else v

    return fut.then(done)


def hook_label(args):
    return {"allreduce": "torch-ddp", "fp16": "torch-ddp-fp16"}.get(args.hook, "torch-ddp-powersgd%d" % args.powersgd_rank)


def worker(rank, args, port, models):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)  # 4 ranks on a small host: one compute thread each
    p = args.ranks
    init = args.init_method or "tcp://127.0.0.1:%d" % port
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=p)
    failed = False

    class Grads(nn.Module):
        def __init__(self, tensors):
            super().__init__()
            self.params = nn.ParameterList([nn.Parameter(torch.zeros(shape)) for _, shape in tensors])

        def forward(self):
            return sum(q.sum() for q in self.params)

    if rank == 0:
        print("# PyTorch %s DDP, gloo, %d ranks, bucket_cap_mb=%g, hook %s; median of %d iterations (max over ranks), %d warm-up"
              % (torch.__version__, p, args.bucket_cap_mb, hook_label(args), args.iters, args.warmup))
        print("# span: first bucket launched -> last bucket reduced; compute: the same under no_sync()")
        print("%-16s %9s %8s %9s %9s %11s" % ("model", "MiB", "buckets", "wall_ms", "span_ms", "compute_ms"))
        sys.stdout.flush()

    for name, tensors, total in models:
        module = Grads(tensors)
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(args.first_bucket_mb * 2**20)  # DDP reads it when it builds its buckets
        ddp = DDP(module, bucket_cap_mb=args.bucket_cap_mb)
        if args.hook == "allreduce":
            state = HookState(p)
            ddp.register_comm_hook(state, timed_allreduce_hook)
        else:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook as psgd
            if args.hook == "fp16":
                state = HookState(p, default_hooks.fp16_compress_hook, None)  # None: the default group
            else:
                ps = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                        start_powerSGD_iter=2, min_compression_rate=2, use_error_feedback=True,
                                        warm_start=True, random_seed=0)
                state = HookState(p, psgd.powerSGD_hook, ps)
            ddp.register_comm_hook(state, timed_hook)
        scale = float(rank + 1)

        def step(sync=True):
            for q in module.params:
                q.grad = None
            state.reset()
            dist.barrier()
            t0 = time.perf_counter()
            if sync:
                (ddp() * scale).backward()
            else:
                with ddp.no_sync():
                    (ddp() * scale).backward()
            t1 = time.perf_counter()
            span = (state.last - state.first) if (sync and state.first is not None and state.last is not None) else 0.0
            return t1 - t0, span, state.calls

        step()
        want = (p + 1) / 2.0
        wrong = sum(int((q.grad != want).sum().item()) for q in module.params)
        if wrong:
            print("rank %d: %s: %d gradient elements differ from %g" % (rank, name, wrong, want), file=sys.stderr)
        bad = torch.tensor([float(wrong)])
        dist.all_reduce(bad)
        if bad.item() != 0:
            failed = True
            break
        buckets = 0
        for _ in range(args.warmup):
            _, _, buckets = step()
        comp = []
        for _ in range(args.iters):
            comp.append(step(sync=False)[0])
        wall, span = [], []
        for _ in range(args.iters):
            w, s, buckets = step()
            wall.append(w)
            span.append(s)
        t = torch.tensor(wall + span + comp, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        t = t.tolist()
        n = args.iters
        wall_m, span_m, comp_m = (statistics.median(t[k * n:(k + 1) * n]) * 1e3 for k in range(3))
        if rank == 0:
            print("%-16s %9.1f %8d %9.2f %9.2f %11.2f" % (name, total / 2.0**20, buckets, wall_m, span_m, comp_m))
            print("result model=%s strategy=%s wall_ms=%.3f sync_ms=%.3f compute_ms=%.3f buckets=%d bytes=%d"
                  % (name, hook_label(args), wall_m, span_m, comp_m, buckets, total))
            sys.stdout.flush()
        del ddp, module
    dist.barrier()
    dist.destroy_process_group()
    if failed:
        sys.exit(1)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    args = parse_args(argv)
    try:
        models = [load_model(path) for path in args.model_json]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("ddp_torch.py: %s" % e, file=sys.stderr)
        return 2
    try:
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except ImportError as e:
        print("ddp_torch.py: %s has no PyTorch (%s)" % (sys.executable, e), file=sys.stderr)
        return 3
    if not dist.is_available() or not dist.is_gloo_available():
        print("ddp_torch.py: this PyTorch has no torch.distributed gloo backend", file=sys.stderr)
        return 3
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.init_method:  # one rank of a launched job
        env = os.environ
        rank = env.get("OMPI_COMM_WORLD_RANK", env.get("RANK"))
        world = env.get("OMPI_COMM_WORLD_SIZE", env.get("WORLD_SIZE"))
        if rank is None or world is None:
            print("ddp_torch.py: --init-method: no rank in the environment (OMPI_COMM_WORLD_RANK or RANK)", file=sys.stderr)
            return 2
        args.ranks = int(world)
        if args.ifname:
            os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
        try:
            worker(int(rank), args, 0, models)
        except SystemExit as e:
            return int(e.code or 0)
        return 0
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # every rank on this host
    port = args.port or free_port()
    try:
        mp.spawn(worker, args=(args, port, models), nprocs=args.ranks, join=True)
    except mp.ProcessRaisedException as e:
        print("ddp_torch.py: a rank failed:\n%s" % e, file=sys.stderr)
        return 1
    except mp.ProcessExitedException as e:
        print("ddp_torch.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
