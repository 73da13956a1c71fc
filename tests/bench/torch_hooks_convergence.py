#!/usr/bin/env python3
"""Steps to a target loss with PyTorch's own DDP compression hooks, on the MLP task of the
compression family's convergence test (tests/mpi/convergence/compressors.cpp).

    python3 tests/bench/torch_hooks_convergence.py [--ranks 4] [--steps 200] [--seed 7]

The task, as tests/mpi/mlp_task.hpp states it: a tanh MLP 64-128-128-10 (weights N(0, 1/fan_in),
zero biases), softmax cross-entropy, trained on 384 Gaussian inputs labelled by the argmax of a
teacher MLP 64-32-10 (weights N(0, 4/fan_in)), global batch 96 in consecutive rows (rank r takes
its quarter), plain SGD at lr 0.1, 200 steps, gradients averaged over --ranks gloo processes by
DistributedDataParallel with:

  allreduce    DDP's default hook (lossless)
  fp16         default_hooks.fp16_compress_hook
  powersgd1/4  powerSGD_hook, matrix_approximation_rank 1 or 4, start_powerSGD_iter 10,
               min_compression_rate 2, error feedback and warm start (the parameters of the
               convergence test's powersgd cases)

Random numbers are PyTorch's, not autosync's portable generator, so the losses are not the
Eigen trainer's; the comparable figures are relative: each hook's final loss over the lossless
one at the same step count, and the steps each needs to reach the loss lossless training has
after half the steps (the same definition as the convergence test's). Prints one line per hook.
Exit status 3 when this interpreter has no torch.distributed with gloo.
"""
import argparse
import os
import sys
import tempfile


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--hooks", default="allreduce,fp16,powersgd1,powersgd4")
    a = ap.parse_args(argv)
    if a.ranks < 1 or 96 % a.ranks != 0:
        ap.error("--ranks must divide the global batch of 96")
    if a.steps < 2:
        ap.error("--steps must be >= 2")
    known = {"allreduce", "fp16", "powersgd1", "powersgd4"}
    a.hooks = a.hooks.split(",")
    for h in a.hooks:
        if h not in known:
            ap.error(f"unknown hook '{h}' (known: {', '.join(sorted(known))})")
    return a


def mlp(torch, widths, gain, gen):
    layers = []
    for i in range(len(widths) - 1):
        lin = torch.nn.Linear(widths[i], widths[i + 1])
        with torch.no_grad():
            lin.weight.copy_(torch.randn(widths[i + 1], widths[i], generator=gen) * (gain / widths[i] ** 0.5))
            lin.bias.zero_()
        layers.append(lin)
        if i + 2 < len(widths):
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


def worker(rank, a, hook, init_file, out_file):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=a.ranks)
    gen = torch.Generator().manual_seed(42)
    teacher = mlp(torch, [64, 32, 10], 2.0, gen)
    x = torch.randn(384, 64, generator=gen)
    with torch.no_grad():
        y = teacher(x).argmax(dim=1)
    model = mlp(torch, [64, 128, 128, 10], 1.0, torch.Generator().manual_seed(a.seed))
    ddp = DDP(model)
    if hook != "allreduce":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook as psgd
        if hook == "fp16":
            ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        else:
            state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=int(hook[len("powersgd"):]),
                                       start_powerSGD_iter=10, min_compression_rate=2, use_error_feedback=True,
                                       warm_start=True, random_seed=0)
            ddp.register_comm_hook(state, psgd.powerSGD_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    per = 96 // a.ranks
    losses = []
    for k in range(a.steps):
        first = (k * 96) % 384 + rank * per
        xb, yb = x[first:first + per], y[first:first + per]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(xb), yb)
        loss.backward()
        opt.step()
        t = loss.detach().clone()
        dist.all_reduce(t)
        losses.append(float(t) / a.ranks)
    if rank == 0:
        with open(out_file, "w") as f:
            f.write("\n".join(repr(v) for v in losses))
    dist.destroy_process_group()


def steps_to(losses, target):
    for k, v in enumerate(losses):
        if v <= target:
            return k + 1
    return len(losses) + 1


def main(argv):
    a = parse_args(argv)
    try:
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        if not dist.is_available() or not dist.is_gloo_available():
            raise ImportError("no gloo")
    except ImportError as e:
        print(f"torch_hooks_convergence: needs torch.distributed with gloo ({e})", file=sys.stderr)
        return 3
    results = {}
    with tempfile.TemporaryDirectory(prefix="autosync-torch-conv-") as d:
        for hook in a.hooks:
            init_file = os.path.join(d, f"init-{hook}")
            out_file = os.path.join(d, f"losses-{hook}")
            mp.spawn(worker, args=(a, hook, init_file, out_file), nprocs=a.ranks, join=True)
            with open(out_file) as f:
                results[hook] = [float(v) for v in f.read().split()]
    print(f"torch {torch.__version__}, gloo, {a.ranks} ranks, {a.steps} steps, the MLP task of tests/mpi/mlp_task.hpp")
    base = results.get("allreduce")
    target = base[len(base) // 2 - 1] if base else None
    for hook, losses in results.items():
        line = f"  {hook:10} final loss {losses[-1]:.4f}"
        if base:
            line += (f"  lossless {base[-1]:.4f}  ratio {losses[-1] / base[-1]:.4f}  steps to {target:.4f}: "
                     f"lossless {steps_to(base, target)}, this {steps_to(losses, target)}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
