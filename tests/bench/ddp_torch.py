#!/usr/bin/env python3
"""PyTorch DistributedDataParallel itself on the gradients of an autosync model file.

    python3 tests/bench/ddp_torch.py --model-json DIR/resnet50.json [--model-json ...]
                                     [--ranks 4] [--iters 10] [--warmup 2] [--bucket-cap-mb 25]

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

Output: a table, and one line per model for tests/bench/run-mpi-benchmarks.sh:
    result model=resnet50 strategy=torch-ddp wall_ms=... sync_ms=<span> compute_ms=... buckets=... bytes=...
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
    ap.add_argument("--port", type=int, default=0, help="rendezvous port on 127.0.0.1 (0: a free one)")
    a = ap.parse_args(argv)
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
    def __init__(self, world):
        self.world = world
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


def worker(rank, args, port, models):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)  # 4 ranks on a small host: one compute thread each
    p = args.ranks
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=p)
    failed = False

    class Grads(nn.Module):
        def __init__(self, tensors):
            super().__init__()
            self.params = nn.ParameterList([nn.Parameter(torch.zeros(shape)) for _, shape in tensors])

        def forward(self):
            return sum(q.sum() for q in self.params)

    if rank == 0:
        print("# PyTorch %s DDP, gloo, %d ranks, bucket_cap_mb=%g; median of %d iterations (max over ranks), %d warm-up"
              % (torch.__version__, p, args.bucket_cap_mb, args.iters, args.warmup))
        print("# span: first bucket launched -> last bucket reduced; compute: the same under no_sync()")
        print("%-16s %9s %8s %9s %9s %11s" % ("model", "MiB", "buckets", "wall_ms", "span_ms", "compute_ms"))
        sys.stdout.flush()

    for name, tensors, total in models:
        module = Grads(tensors)
        ddp = DDP(module, bucket_cap_mb=args.bucket_cap_mb)
        state = HookState(p)
        ddp.register_comm_hook(state, timed_allreduce_hook)
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
            print("result model=%s strategy=torch-ddp wall_ms=%.3f sync_ms=%.3f compute_ms=%.3f buckets=%d bytes=%d"
                  % (name, wall_m, span_m, comp_m, buckets, total))
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
