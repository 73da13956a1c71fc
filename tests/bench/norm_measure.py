#!/usr/bin/env python3
"""Batch norm's kernels on a GPU, shape by shape: the data of the compute model's batch-norm term.

    python3 tests/bench/norm_measure.py --out bn.jsonl
    python3 tests/bench/norm_measure.py --batch 32 --channels 64,256 --sides 56 --precisions bf16

One torch.nn.BatchNorm2d in training mode, NCHW, as a CNN runs it: under `bf16` / `fp16` the input
is 16-bit (a convolution's output under torch.autocast) and the module's weights and statistics
stay fp32 (autocast leaves batch norm alone). PyTorch then runs its own kernels for bf16
(aten/src/ATen/native/cuda/Normalization.cuh) and cuDNN's for fp16; under `pytorch-fp32` / `fp32`
everything is fp32, on cuDNN's kernels (the two names run the same kernels: batch norm has no TF32). For every shape (N, C, H = W) of the grid, after two
untimed steps, `--reps` steps each run the forward and then the backward inside a
torch.profiler.record_function range closed by a device synchronize; the device operations whose
start lies inside a range are that range's (the synchronize keeps the passes apart on the device).
One JSON object per shape and precision, medians over the steps, in microseconds:

    {"precision":"bf16","n":32,"c":64,"h":56,"w":56,"elements":6422528,"fwd_us":65.95,
     "fwd_kernels":[["<name>",us],...],"bwd_us":140.38,"bwd_kernels":[...],
     "device":"NVIDIA H200","sms":132,"l2_bytes":<bytes>,"torch":"2.11.0","cudnn":<version>}

A kernel's us is its median over the steps (its name without "void", namespaces and arguments,
cut to 60 characters; kernels of one name summed); fwd_us / bwd_us are the medians of each step's
summed device time. Shapes over --max-elements are skipped. "l2_bytes" is the device's L2 cache
and "cudnn" torch.backends.cudnn's version (tests/data/compute/h200-batchnorm.jsonl was measured
before the script wrote them).
"""

import argparse
import json
import re
import statistics
import sys

import torch


def short(name):
    """A kernel's name without "void", namespaces and arguments, cut to 60 characters."""
    name = name.removeprefix("void ").replace("(anonymous namespace)::", "").split("(")[0]
    return re.sub(r"[A-Za-z_]\w*::", "", name)[:60]


def ints(text):
    return [int(v) for v in text.split(",") if v]


def grid(batches, channels, sides, max_elements):
    for h in sides:
        for c in channels:
            for n in batches:
                if n * c * h * h <= max_elements:
                    yield n, c, h


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", default="8,16,32,64,128", help="comma-separated N (default 8,16,32,64,128)")
    ap.add_argument("--channels", default="16,32,64,96,128,192,256,384,512,1024,2048",
                    help="comma-separated C")
    ap.add_argument("--sides", default="7,14,28,56,112", help="comma-separated H = W (default 7,14,28,56,112)")
    ap.add_argument("--precisions", default="bf16,fp16,pytorch-fp32",
                    help="comma-separated: bf16, fp16, pytorch-fp32, fp32 (default bf16,fp16,pytorch-fp32)")
    ap.add_argument("--reps", type=int, default=5, help="profiled steps per shape (default 5)")
    ap.add_argument("--max-elements", type=int, default=1 << 28, help="skip larger shapes (default 2^28)")
    ap.add_argument("--out", default=None, help="also append the lines to this file")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("norm_measure.py: no CUDA device")
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "pytorch-fp32": None, "fp32": None}
    precisions = [p for p in a.precisions.split(",") if p]
    for p in precisions:
        if p not in dtypes:
            raise SystemExit(f"--precisions: unknown '{p}' (valid: {', '.join(dtypes)})")
    shapes = list(grid(ints(a.batch), ints(a.channels), ints(a.sides), a.max_elements))
    from torch.profiler import ProfilerActivity, profile, record_function

    props = torch.cuda.get_device_properties(0)
    common = {"device": torch.cuda.get_device_name(), "sms": props.multi_processor_count,
              "l2_bytes": props.L2_cache_size, "torch": torch.__version__.split("+")[0],
              "cudnn": torch.backends.cudnn.version()}
    out = open(a.out, "a") if a.out else None
    for p in precisions:
        dtype = dtypes[p]
        keys = []
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i, (n, c, h) in enumerate(shapes):
                bn = torch.nn.BatchNorm2d(c).cuda().train()
                x = torch.randn(n, c, h, h, device="cuda", dtype=dtype or torch.float32).requires_grad_(True)
                g = torch.randn(n, c, h, h, device="cuda", dtype=dtype or torch.float32)

                def step(tag):
                    for t in (x, bn.weight, bn.bias):
                        t.grad = None
                    torch.cuda.synchronize()
                    with record_function(f"fwd#{tag}"):
                        with torch.autocast("cuda", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
                            y = bn(x)
                        torch.cuda.synchronize()
                    with record_function(f"bwd#{tag}"):
                        y.backward(g)
                        torch.cuda.synchronize()

                for _ in range(2):
                    step("warm")
                for r in range(a.reps):
                    step(f"{i}#{r}")
                keys.append((n, c, h))
                del bn, x, g
        ranges, kernels = [], []
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CPU:
                if e.name.startswith(("fwd#", "bwd#")) and not e.name.endswith("#warm"):
                    ranges.append((e.time_range.start, e.time_range.end, e.name))
            elif not e.name.startswith(("fwd#", "bwd#")):  # not the ranges' device-side copies
                kernels.append((e.time_range.start, e.time_range.end - e.time_range.start, short(e.name)))
        ranges.sort()
        kernels.sort()
        per = {}  # (pass, shape index) -> [per step: {kernel: us}]
        j = 0
        for start, end, name in ranges:
            kind, idx, _ = name.split("#")
            got = {}
            while j < len(kernels) and kernels[j][0] < start:
                j += 1
            while j < len(kernels) and kernels[j][0] <= end:
                got[kernels[j][2]] = got.get(kernels[j][2], 0.0) + kernels[j][1]
                j += 1
            per.setdefault((kind, int(idx)), []).append(got)
        for i, (n, c, h) in enumerate(keys):
            line = {"precision": p, "n": n, "c": c, "h": h, "w": h, "elements": n * c * h * h}
            for kind in ("fwd", "bwd"):
                steps = per.get((kind, i), [])
                line[f"{kind}_us"] = round(statistics.median(sum(s.values()) for s in steps), 2) if steps else None
                names = sorted({k for s in steps for k in s})
                line[f"{kind}_kernels"] = [[k, round(statistics.median(s.get(k, 0.0) for s in steps), 2)] for k in names]
            line.update(common)
            text = json.dumps(line, separators=(",", ":"))
            print(text)
            if out:
                out.write(text + "\n")
                out.flush()
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
