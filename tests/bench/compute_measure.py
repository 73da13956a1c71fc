#!/usr/bin/env python3
"""Measure the zoo's models on a GPU with PyTorch, for the compute model's table.

    python3 tests/bench/compute_measure.py --out measured.jsonl                 # every zoo model, fp32 and bf16
    python3 tests/bench/compute_measure.py --models resnet101,gpt2-medium --precisions bf16

Each zoo model (include/autosync/zoo/models.hpp) is built as the PyTorch module it describes, at the
zoo's default per-device batch, with random weights, in training mode:

    resnet50/101/152, vgg16   torchvision.models.<name>(), 224 x 224 images, cross-entropy loss
    bert-base, bert-large     transformers.BertModel (eager attention, pooler), batch 8 x 512; the
                              loss is the mean of the last hidden state plus the pooler's output
                              (the zoo's BERT has no head: a user's head comes after the pooler)
    gpt2, gpt2-medium/large/xl transformers.GPT2LMHeadModel (eager attention), batch 4 x 1024, the
                              language-modelling loss on the inputs
    ncf                       not measured here (the zoo's NCF is a TF model)

Forward (inputs on the device, through the loss) and backward (loss.backward()) are timed apart
with CUDA events, after `--warmup` untimed steps; the gradients are dropped between steps (set to
None, untimed). Two sets of `--iters` steps: as launched ("wall_": what a plain training loop
sees, which on a fast GPU includes the CPU's kernel launches: bf16 autocast steps of the smaller
models are launch-bound), and GPU-bound (the GPU sleeps for 3x the CPU's queueing time before
each step, so every kernel is queued before the first runs: the device's own time, what the
compute model describes). The sleep buys a head start of the launch queue's depth (about a
thousand kernels): a model with more kernels whose CPU side is slower than its GPU side falls back
to launch-bound part way ("gpu_bound": false when a step took longer to queue than the sleep).
Last, three steps under torch.profiler: the union of the device's kernel, copy and fill intervals
of forward and of backward ("kernel_": the device's own busy time, launch gaps left out; with
"kernels", the count of device operations of each). The medians are printed, one JSON object per line:

    {"model": "resnet101", "precision": "bf16", "batch": 32, "forward_ms": 9.745, "backward_ms": 19.873,
     "wall_forward_ms": 28.976, "wall_backward_ms": 33.675, "queue_ms": 250.5, "gpu_bound": false,
     "kernel_forward_ms": 8.705, "kernel_backward_ms": 13.537, "kernels": [891, 928],
     "device": "NVIDIA H200", "torch": "2.11.0"}

(one H200: the CPU queued a step of 1,819 kernels slower than the GPU ran it, so even the
GPU-bound events caught launch gaps; the kernel busy time is the figure the compute table holds)

Precisions as export_pytorch_model.py names them: pytorch-fp32 (PyTorch's defaults: TF32 cuDNN
convolutions, fp32 matmuls), fp32 (TF32 off), tf32 (TF32 on for both), bf16 / fp16 (torch.autocast
around the forward pass). The numbers are what tests/common/compute_measurements.hpp holds for a
device; tests/bench/compute_table.cpp prints them against the compute model.
"""

import argparse
import json
import statistics
import sys
import time

import torch

ZOO = ["resnet50", "resnet101", "resnet152", "vgg16", "bert-base", "bert-large", "gpt2", "gpt2-medium",
       "gpt2-large", "gpt2-xl"]
PRECISIONS = ["pytorch-fp32", "fp32", "tf32", "bf16", "fp16"]
GPT2 = {"gpt2": (12, 768), "gpt2-medium": (24, 1024), "gpt2-large": (36, 1280), "gpt2-xl": (48, 1600)}
BERT = {"bert-base": (12, 768), "bert-large": (24, 1024)}


def build(name, device):
    """The module, a function making one step's inputs, and the loss of an output, at the zoo's batch."""
    if name.startswith("resnet") or name == "vgg16":
        import torchvision
        with torch.device(device):
            module = getattr(torchvision.models, name)()
        batch = 32
        images = torch.randn(batch, 3, 224, 224, device=device)
        labels = torch.randint(0, 1000, (batch,), device=device)
        return module, batch, lambda m: torch.nn.functional.cross_entropy(m(images).float(), labels)
    import transformers
    if name in BERT:
        layers, hidden = BERT[name]
        cfg = transformers.BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=hidden // 64,
                                      intermediate_size=4 * hidden)
        cfg._attn_implementation = "eager"
        with torch.device(device):
            module = transformers.BertModel(cfg)
        batch, seq = 8, 512
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=device)

        def loss(m):
            out = m(input_ids=ids)
            return out.last_hidden_state.float().mean() + out.pooler_output.float().mean()
        return module, batch, loss
    if name in GPT2:
        layers, hidden = GPT2[name]
        cfg = transformers.GPT2Config(n_embd=hidden, n_layer=layers, n_head=hidden // 64, n_positions=1024,
                                      )
        cfg._attn_implementation = "eager"
        with torch.device(device):
            module = transformers.GPT2LMHeadModel(cfg)
        batch, seq = 4, 1024
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=device)
        return module, batch, lambda m: m(input_ids=ids, labels=ids).loss
    raise SystemExit(f"--models: unknown or unmeasured model '{name}' (valid: {', '.join(ZOO)})")


def set_precision(p):
    tf32 = {"pytorch-fp32": (True, False), "fp32": (False, False), "tf32": (True, True)}.get(p, (True, False))
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32


def steps(module, loss_of, dtype, count, sleep_cycles):
    """Times `count` steps; with sleep_cycles > 0 the GPU first sleeps that long, so the CPU has
    queued the whole step before its first kernel runs (GPU-bound times). Returns the forward and
    backward milliseconds and the longest CPU time one step took to queue."""
    fwd, bwd, queue = [], [], 0.0
    for _ in range(count):
        for p in module.parameters():
            p.grad = None
        start, mid, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize()
        if sleep_cycles > 0:
            torch.cuda._sleep(sleep_cycles)
        t0 = time.perf_counter()
        start.record()
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = loss_of(module)
        mid.record()
        loss.backward()
        end.record()
        queue = max(queue, time.perf_counter() - t0)
        torch.cuda.synchronize()
        fwd.append(start.elapsed_time(mid))
        bwd.append(mid.elapsed_time(end))
    return fwd, bwd, queue


def kernel_times(module, loss_of, dtype, count):
    """The device's own time of forward and backward: torch.profiler's CUDA kernels (and copies,
    fills) of each, the union of their intervals, medians of `count` steps; and the number of
    device operations. Needs no idle GPU: launch gaps are not counted."""
    from torch.profiler import ProfilerActivity, profile

    def busy(prof):
        spans = []
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                spans.append((e.time_range.start, e.time_range.end))
        spans.sort()
        total, end = 0.0, float("-inf")
        for a, b in spans:
            if b <= end:
                continue
            total += b - max(a, end)
            end = b
        return total / 1e3, len(spans)

    fwd, bwd, nf, nb = [], [], 0, 0
    for _ in range(count):
        for p in module.parameters():
            p.grad = None
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as pf:
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = loss_of(module)
            torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as pb:
            loss.backward()
            torch.cuda.synchronize()
        (f, nf), (b, nb) = busy(pf), busy(pb)
        fwd.append(f)
        bwd.append(b)
    return statistics.median(fwd), statistics.median(bwd), nf, nb


def measure(name, precision, warmup, iters, device):
    set_precision(precision)
    module, batch, loss_of = build(name, device)
    module.train()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    steps(module, loss_of, dtype, warmup, 0)
    wall_f, wall_b, queue = steps(module, loss_of, dtype, iters, 0)
    # 2 GHz covers the SM clocks of current datacenter GPUs: the sleep lasts at least 3x the queueing
    cycles = int(2.0e9 * (3.0 * queue + 0.01))
    gpu_f, gpu_b, queue2 = steps(module, loss_of, dtype, iters, cycles)
    try:
        kf, kb, nf, nb = kernel_times(module, loss_of, dtype, 3)
        kernels = {"kernel_forward_ms": round(kf, 3), "kernel_backward_ms": round(kb, 3), "kernels": [nf, nb]}
    except Exception as e:  # the profiler is optional: the event timings stand without it
        kernels = {"kernel_error": f"{type(e).__name__}: {e}"}
    del module
    torch.cuda.empty_cache()
    med = lambda v: round(statistics.median(v), 3)
    return {"model": name, "precision": precision, "batch": batch, "forward_ms": med(gpu_f), "backward_ms": med(gpu_b),
            "wall_forward_ms": med(wall_f), "wall_backward_ms": med(wall_b), "queue_ms": round(1e3 * max(queue, queue2), 1),
            "gpu_bound": bool(queue2 * 2.0e9 < cycles),  # false: a step queued longer than the sleep
            **kernels, "device": torch.cuda.get_device_name(), "torch": torch.__version__.split("+")[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(ZOO), help="comma-separated zoo names (default: all but ncf)")
    ap.add_argument("--precisions", default="pytorch-fp32,bf16", help="comma-separated (default pytorch-fp32,bf16)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps (default 3)")
    ap.add_argument("--iters", type=int, default=7, help="timed steps; the median is printed (default 7)")
    ap.add_argument("--out", default=None, help="also append the lines to this file")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("compute_measure.py: no CUDA device (these are GPU timings)")
    if a.warmup < 0 or a.iters < 1:
        sys.exit("--warmup must be >= 0 and --iters >= 1")
    precisions = [p for p in a.precisions.split(",") if p]
    for p in precisions:
        if p not in PRECISIONS:
            sys.exit(f"--precisions: unknown precision '{p}' (valid: {', '.join(PRECISIONS)})")
    for name in [m for m in a.models.split(",") if m]:
        for p in precisions:
            try:
                row = measure(name, p, a.warmup, a.iters, "cuda")
            except SystemExit:
                raise
            except Exception as e:  # out of memory, a missing package: the row says so, the rest go on
                torch.cuda.empty_cache()
                row = {"model": name, "precision": p, "error": f"{type(e).__name__}: " + str(e).split("\n")[0]}
            line = json.dumps(row)
            print(line, flush=True)
            if a.out:
                with open(a.out, "a") as f:
                    f.write(line + "\n")


if __name__ == "__main__":
    main()
