#!/usr/bin/env python3
"""Measure the zoo's models on a GPU with PyTorch, for the compute model's table.

    python3 tests/bench/compute_measure.py --out measured.jsonl                 # every zoo model, fp32 and bf16
    python3 tests/bench/compute_measure.py --models resnet101,gpt2-medium --precisions bf16

Each zoo model (include/autosync/zoo/models.hpp) is built as the PyTorch module it describes, at the
zoo's default per-device batch, with random weights, in training mode:

    resnet50/101/152, vgg16   torchvision.models.<name>(), 224 x 224 images, cross-entropy loss
    tv:<name>                 any other torchvision classifier alike (models outside the zoo, for
                              the exporter's layers: tests/bench/export_heldout.py)
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

Other shapes: --batch B (every model) and --seq S (the HuggingFace models, at most 1,024 for GPT-2
and 512 for BERT); --attention sdpa builds the HuggingFace models with attn_implementation="sdpa"
(fused attention, transformers' own default) instead of eager. Their lines carry "seq" and
"attention".

Per op (--by-op; any model): where a pass's device time goes, by the op that launched each kernel
(the innermost torch op: "aten::mm", "aten::_softmax", ...) and the kernel's name, with calls and
ms per step over 3 profiled steps after --warmup; one JSON line per pass with the 60 largest pairs:

    python3 tests/bench/compute_measure.py --by-op --models gpt2 --precisions bf16

    {"model": "gpt2", "precision": "bf16", "batch": 4, "seq": 1024, "attention": "eager", "pass": "forward",
     "busy_ms": 19.34, "linked_ms": 19.342, "ops": [["aten::mm", "<kernel name>", 1, 3.3344], ...],
     "device": "NVIDIA H200", "torch": "2.11.0", "transformers": "5.17.0"}

(busy_ms: the union of the pass's device operations, as "kernel_forward_ms"; linked_ms: the sum of
the kernels the profiler linked to an op.)

Per layer (--per-layer; the CNNs only: resnet50/101/152, vgg16):

    python3 tests/bench/compute_measure.py --per-layer --models vgg16,resnet50 --out layers.jsonl

where the kernel time of a pass goes, module by module. Every module's forward is wrapped in a
torch.profiler.record_function range "fwd:<module name>" (forward pre-hook to forward hook) and
its backward in "bwd:<module name>" (full backward pre-hook, when the gradient of its output is
ready, to full backward hook, when the gradients of its inputs are); the loss is a module named
"loss". A range's time is the device time of the kernels (and copies, fills) launched by the ops
that start inside it and inside no range nested in it: a leaf module's own kernels, and a
container's own remainder. To get the kernels of the zoo's layers and nothing else, the modules
are changed in this mode, not their arithmetic: every ReLU runs out of place (inplace=False: an
in-place op on a hooked module's output breaks full backward hooks), and torchvision's
Bottleneck runs its three ReLUs as the modules relu1, relu2, relu3 and its `out += identity` as
the module "residual" (out of place), the zoo's layer names. The gradients of a block's input
that meet at the fork (the residual's backward in the zoo) are summed by the autograd engine
after conv1's backward: they land in the block's own remainder (bwd of "layer1.0"). The images
need no gradient, so the first conv's backward range closes when its weight and bias gradients
are ready (its input has none to wait for). Medians of 3 profiled steps after --warmup, one JSON
object per (model, precision, module), in forward order, then one per pass:

    {"model": "vgg16", "precision": "pytorch-fp32", "batch": 32, "layer": "features.0", "type": "Conv2d",
     "leaf": true, "in": [32, 3, 224, 224], "out": [32, 64, 224, 224], "fwd_ms": 0.6567, "bwd_ms": 0.585}
    {"model": "vgg16", "precision": "bf16", "batch": 32, "pass": "backward", "total_ms": 10.0895, "busy_ms": 10.082,
     "attributed_ms": 10.0887, "unattributed_ms": 0.0007, "kernels": 221, "attribution": "launch",
     "unattributed": [["<kernel name>", ms], ...], "device": "NVIDIA H200", "torch": "2.11.0"}

total_ms sums the durations of the pass's device operations, busy_ms is their union (the figure
of "kernel_forward_ms" above), unattributed_ms the part of total_ms launched inside no range (the
backward's first fill of the loss gradient, say), "unattributed" its largest kernels (one step).
A kernel belongs to the range its launching op started in ("attribution": "launch"; "device":
by its own start on the GPU, inside the ranges' device-side spans, where the profiler did not link
kernels to ops). --kernels adds each layer's kernels to its line, by name with calls and ms per
step ("fwd_kernels": [["<kernel name>", calls, ms], ...], "bwd_kernels"): where the time goes
inside a layer (the GEMM, cuDNN's layout transposes, a separate bias kernel). --device cpu runs
the same bookkeeping without a GPU, with the CPU time of the ops in place of kernel time: a check
of the hooks and ranges, not a measurement (before PyTorch 2.0, which has no full backward
pre-hooks, a backward range opens late, at its output's gradient hook).
"""

import argparse
import json
import statistics
import sys
import time
import types

import torch

ZOO = ["resnet50", "resnet101", "resnet152", "vgg16", "bert-base", "bert-large", "gpt2", "gpt2-medium",
       "gpt2-large", "gpt2-xl"]
PRECISIONS = ["pytorch-fp32", "fp32", "tf32", "bf16", "fp16"]
GPT2 = {"gpt2": (12, 768), "gpt2-medium": (24, 1024), "gpt2-large": (36, 1280), "gpt2-xl": (48, 1600)}
BERT = {"bert-base": (12, 768), "bert-large": (24, 1024)}
ATTENTION = ["eager"]  # --attention
SHAPE = {"batch": 0, "seq": 0}  # --batch, --seq (0: the zoo's default)


def build(name, device):
    """The module, a function making one step's inputs, and the loss of an output, at the zoo's batch."""
    if name.startswith("resnet") or name == "vgg16" or name.startswith("tv:"):
        import torchvision
        name = name[3:] if name.startswith("tv:") else name
        if not hasattr(torchvision.models, name):
            raise SystemExit(f"--models: torchvision has no model '{name}'")
        with torch.device(device):
            module = getattr(torchvision.models, name)()
        batch = SHAPE["batch"] or 32
        images = torch.randn(batch, 3, 224, 224, device=device)
        labels = torch.randint(0, 1000, (batch,), device=device)
        return module, batch, lambda m: torch.nn.functional.cross_entropy(m(images).float(), labels)
    import transformers
    if name in BERT:
        layers, hidden = BERT[name]
        cfg = transformers.BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=hidden // 64,
                                      intermediate_size=4 * hidden)
        cfg._attn_implementation = ATTENTION[0]
        with torch.device(device):
            module = transformers.BertModel(cfg)
        batch, seq = SHAPE["batch"] or 8, SHAPE["seq"] or 512
        if seq > 512:
            raise SystemExit(f"--seq: BERT has 512 positions, got {seq}")
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=device)

        def loss(m):
            out = m(input_ids=ids)
            return out.last_hidden_state.float().mean() + out.pooler_output.float().mean()
        return module, batch, loss
    if name in GPT2:
        layers, hidden = GPT2[name]
        cfg = transformers.GPT2Config(n_embd=hidden, n_layer=layers, n_head=hidden // 64, n_positions=1024,
                                      )
        cfg._attn_implementation = ATTENTION[0]
        with torch.device(device):
            module = transformers.GPT2LMHeadModel(cfg)
        batch, seq = SHAPE["batch"] or 4, SHAPE["seq"] or 1024
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


def union_us(spans):
    """The length of the union of (start, end) intervals (the profiler's microseconds)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def profiled_steps(module, loss_of, dtype, count, activities):
    """`count` steps, forward and backward each under its own torch.profiler (of `activities`),
    the gradients dropped before each: yields the forward's and the backward's profile."""
    from torch.profiler import profile
    for _ in range(count):
        for p in module.parameters():
            p.grad = None
        torch.cuda.synchronize()
        with profile(activities=activities) as pf:
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = loss_of(module)
            torch.cuda.synchronize()
        with profile(activities=activities) as pb:
            loss.backward()
            torch.cuda.synchronize()
        yield pf, pb


def kernel_times(module, loss_of, dtype, count):
    """The device's own time of forward and backward: torch.profiler's CUDA kernels (and copies,
    fills) of each, the union of their intervals, medians of `count` steps; and the number of
    device operations. Needs no idle GPU: launch gaps are not counted."""
    from torch.profiler import ProfilerActivity

    def busy(prof):
        spans = [(e.time_range.start, e.time_range.end) for e in prof.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA]
        return union_us(spans) / 1e3, len(spans)

    fwd, bwd, nf, nb = [], [], 0, 0
    for pf, pb in profiled_steps(module, loss_of, dtype, count, [ProfilerActivity.CUDA]):
        (f, nf), (b, nb) = busy(pf), busy(pb)
        fwd.append(f)
        bwd.append(b)
    return statistics.median(fwd), statistics.median(bwd), nf, nb


# ---- per op (--by-op) ---------------------------------------------------------------------------

def measure_ops(name, precision, warmup, count=3, top=60):
    """One line per pass of a model and precision: where its device time goes, by the op that
    launched each kernel (the innermost torch op, "aten::mm", "aten::_softmax", ...) and the
    kernel's name, calls and ms per step, over `count` profiled steps; the largest `top`."""
    from torch.profiler import ProfilerActivity
    set_precision(precision)
    module, batch, loss_of = build(name, "cuda")
    module.train()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    steps(module, loss_of, dtype, warmup, 0)
    tables = {"forward": {}, "backward": {}}
    busy = {"forward": [], "backward": []}

    def collect(prof, table):
        spans = []
        for e in prof.events():
            if e.device_type != torch.autograd.DeviceType.CPU:
                spans.append((e.time_range.start, e.time_range.end))
            elif e.kernels and not e.name.startswith("cu"):
                for k in e.kernels:
                    slot = table.setdefault((e.name, k.name[:90]), [0, 0.0])
                    slot[0] += 1
                    slot[1] += k.duration / 1e3
        return union_us(spans) / 1e3

    for pf, pb in profiled_steps(module, loss_of, dtype, count, [ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        busy["forward"].append(collect(pf, tables["forward"]))
        busy["backward"].append(collect(pb, tables["backward"]))
    rows = []
    for p in ("forward", "backward"):
        t = tables[p]
        ops = sorted([[op, k, c // count, round(ms / count, 4)] for (op, k), (c, ms) in t.items()],
                     key=lambda x: -x[3])
        rows.append({"model": name, "precision": precision, "batch": batch, **_hf_shape(name), "pass": p,
                     "busy_ms": round(statistics.median(busy[p]), 3),
                     "linked_ms": round(sum(ms for _, ms in t.values()) / count, 3),
                     "ops": ops[:top], "device": torch.cuda.get_device_name(),
                     "torch": torch.__version__.split("+")[0], "transformers": _version("transformers")})
    del module
    torch.cuda.empty_cache()
    return rows


def _hf_shape(name):
    """{"seq": the sequence length, "attention": the attn_implementation} of a HuggingFace model,
    {} of a CNN."""
    if name in BERT:
        return {"seq": SHAPE["seq"] or 512, "attention": ATTENTION[0]}
    if name in GPT2:
        return {"seq": SHAPE["seq"] or 1024, "attention": ATTENTION[0]}
    return {}


def _version(package):
    try:
        return __import__(package).__version__
    except Exception:
        return None


# ---- per layer (--per-layer) -------------------------------------------------------------------

class _Residual(torch.nn.Module):
    """torchvision Bottleneck's `out += identity`, out of place, as a module of its own."""

    def forward(self, out, identity):
        return out + identity


def _bottleneck_forward(self, x):
    """torchvision's Bottleneck.forward, in its order, with the ReLUs and the add as modules."""
    identity = x
    out = self.relu1(self.bn1(self.conv1(x)))
    out = self.relu2(self.bn2(self.conv2(out)))
    out = self.bn3(self.conv3(out))
    if self.downsample is not None:
        identity = self.downsample(x)
    return self.relu3(self.residual(out, identity))


class _Loss(torch.nn.Module):
    """The loss of compute_measure's CNNs (cross entropy of the logits cast to fp32) as a module."""

    def __init__(self, labels):
        super().__init__()
        self.labels = labels

    def forward(self, logits):
        return torch.nn.functional.cross_entropy(logits.float(), self.labels)


class _Ranges:
    """record_function ranges around every module's forward ("fwd:name") and backward ("bwd:name")."""

    def __init__(self, modules):
        self.open = {}      # range name -> the record_function entered for it
        self.waiting = {}   # module name -> parameter gradients still to come before its backward range closes
        self.params = {}    # module name -> its own parameters that need a gradient
        self.shapes = {}    # module name -> (input shape, output shape) of its first call
        self.order = []     # module names in the order their forward first began
        for name, m in modules:
            own = [p for p in m.parameters(recurse=False) if p.requires_grad]
            self.params[name] = len(own)
            m.register_forward_pre_hook(lambda mod, args, n=name: self._forward(n))
            m.register_forward_hook(lambda mod, args, out, n=name: self._forward_done(n, args, out))
            if hasattr(m, "register_full_backward_pre_hook"):
                m.register_full_backward_pre_hook(lambda mod, grad_out, n=name: self._enter("bwd:" + n))
            m.register_full_backward_hook(lambda mod, grad_in, grad_out, n=name: self._backward_done(n, grad_in))
            for p in own:
                p.register_hook(lambda g, n=name: self._gradient_ready(n))

    def _forward(self, name):
        if name not in self.order:
            self.order.append(name)
        self._enter("fwd:" + name)

    def _enter(self, name):
        r = torch.autograd.profiler.record_function(name)
        r.__enter__()
        self.open[name] = r

    def _exit(self, name):
        r = self.open.pop(name, None)
        if r is not None:
            r.__exit__(None, None, None)

    def _forward_done(self, name, args, out):
        self._exit("fwd:" + name)
        if isinstance(out, torch.Tensor):
            if name not in self.shapes:
                first = next((a for a in args if isinstance(a, torch.Tensor)), None)
                self.shapes[name] = (list(first.shape) if first is not None else [], list(out.shape))
            pre = hasattr(torch.nn.Module, "register_full_backward_pre_hook")
            grads = self.params[name] > 0 or any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
            if not pre and out.requires_grad and grads:  # torch < 2.0 (a range with no backward is never opened)
                out.register_hook(lambda g, n=name: self._enter("bwd:" + n))

    def _backward_done(self, name, grad_in):
        # no input needs a gradient (the first conv): the hook comes before the module's backward
        # has run; its range closes with its last parameter gradient instead (_gradient_ready)
        if all(g is None for g in grad_in) and self.params[name] > 0:
            self.waiting[name] = self.params[name]
        else:
            self._exit("bwd:" + name)

    def _gradient_ready(self, name):
        if name in self.waiting:
            self.waiting[name] -= 1
            if self.waiting[name] == 0:
                del self.waiting[name]
                self._exit("bwd:" + name)


def _innermost(ranges, items):
    """Pairs each item (start, payload) with the innermost of the nested ranges (start, end, name)
    that contains its start (None: in none)."""
    rs = sorted(ranges, key=lambda r: (r[0], -r[1]))
    stack, i = [], 0
    for start, payload in sorted(items, key=lambda x: x[0]):
        while i < len(rs) and rs[i][0] <= start:
            while stack and stack[-1][1] < rs[i][0]:
                stack.pop()
            stack.append(rs[i])
            i += 1
        while stack and stack[-1][1] < start:
            stack.pop()
        yield (stack[-1][2] if stack else None), payload


def _attribute(prof, device):
    """Device time per range of one profiled pass: {range: [ms, {kernel: [calls, ms]}]}; the total
    and the union (busy) of the pass's device operations in ms, their count; {kernel: ms} of the
    ones launched inside no range; how they were placed. Each op that launched device work gives
    it to the innermost range (on its thread) that contains the op's start ("launch"). Should that
    leave over a fifth of the device time unplaced (the profiler did not link the kernels to their
    ops), the kernels go by their own start to the innermost of the ranges' device-side copies
    ("device", the profiler's gpu_user_annotation spans)."""
    cpu = torch.autograd.DeviceType.CPU
    ranges, items, dev_ranges, dev_items = {}, {}, [], []
    for e in prof.events():
        start, end = e.time_range.start, e.time_range.end
        if e.name.startswith(("fwd:", "bwd:")):
            (ranges.setdefault(e.thread, []) if e.device_type == cpu else dev_ranges).append((start, end, e.name))
        elif device != "cuda":  # --device cpu: each op's own CPU time
            items.setdefault(e.thread, []).append((start, [(e.name, e.self_cpu_time_total)]))
        elif e.device_type != cpu:
            dev_items.append((start, [(e.name, end - start)]))
        elif e.kernels and not e.name.startswith("cu"):  # torch ops, not CUDA runtime calls
            items.setdefault(e.thread, []).append((start, [(k.name, k.duration) for k in e.kernels]))

    def place(pairs):
        out, free = {}, {}
        for name, ks in pairs:
            for k, d in ks:
                if name is None:
                    free[k[:100]] = free.get(k[:100], 0.0) + d / 1e3
                    continue
                slot = out.setdefault(name, [0.0, {}])
                slot[0] += d / 1e3
                kk = slot[1].setdefault(k[:100], [0, 0.0])
                kk[0] += 1
                kk[1] += d / 1e3
        return out, free

    how = "launch"
    out, free = place(p for thread, its in items.items() for p in _innermost(ranges.get(thread, []), its))
    if device == "cuda":
        spans = [(s, s + ks[0][1]) for s, ks in dev_items]
        total = sum(ks[0][1] for _, ks in dev_items) / 1e3
        if sum(v[0] for v in out.values()) < 0.8 * total and dev_ranges:
            out, free = place(_innermost(dev_ranges, dev_items))
            how = "device"
    else:
        total = sum(d for v in items.values() for _, ks in v for _, d in ks) / 1e3
        spans = [(0.0, total * 1e3)]
    return out, total, union_us(spans) / 1e3, len(spans), free, how


def measure_layers(name, precision, warmup, device, kernels=False, steps=3):
    """The per-layer lines of one model and precision, then one summary line per pass; with
    `kernels`, each line lists the layer's kernels."""
    if not (name.startswith("resnet") or name == "vgg16"):
        raise SystemExit(f"--per-layer: only the CNNs (resnet50/101/152, vgg16), not '{name}'")
    import torchvision
    from torch.profiler import ProfilerActivity, profile
    if device == "cuda":
        set_precision(precision)
    module = getattr(torchvision.models, name)().to(device)
    batch = (SHAPE["batch"] or 32) if device == "cuda" else 2
    images = torch.randn(batch, 3, 224, 224, device=device)
    loss = _Loss(torch.randint(0, 1000, (batch,), device=device))
    for m in module.modules():
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
        if isinstance(m, torchvision.models.resnet.Bottleneck):
            del m.relu
            m.relu1, m.relu2, m.relu3, m.residual = torch.nn.ReLU(), torch.nn.ReLU(), torch.nn.ReLU(), _Residual()
            m.forward = types.MethodType(_bottleneck_forward, m)
    module.train()
    ranges = _Ranges([(n or "model", m) for n, m in module.named_modules()] + [("loss", loss)])
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])

    def step():
        for p in module.parameters():
            p.grad = None
        sync()
        with torch.autocast(device, dtype=dtype, enabled=dtype is not None):
            return loss(module(images))

    for _ in range(warmup):
        step().backward()
        sync()
    runs = {"forward": [], "backward": []}
    for _ in range(steps):
        with profile(activities=acts) as pf:
            out = step()
            sync()
        with profile(activities=acts) as pb:
            out.backward()
            sync()
        runs["forward"].append(_attribute(pf, device))
        runs["backward"].append(_attribute(pb, device))
    assert not ranges.open and not ranges.waiting, f"ranges left open: {list(ranges.open)} {list(ranges.waiting)}"

    med = lambda v: round(statistics.median(v), 4)
    head = {"model": name, "precision": precision, "batch": batch}
    modules = dict([(n or "model", m) for n, m in module.named_modules()] + [("loss", loss)])
    rows = []
    for n in ranges.order + [n for n in modules if n not in ranges.order]:  # forward order (calls, then the uncalled)
        row = dict(head, layer=n, type=type(modules[n]).__name__, leaf=not any(True for _ in modules[n].children()))
        if n in ranges.shapes:
            row["in"], row["out"] = ranges.shapes[n]
        for p, key in (("forward", "fwd"), ("backward", "bwd")):
            per = [r[0].get(key + ":" + n, [0.0, {}]) for r in runs[p]]
            row[key + "_ms"] = med([v[0] for v in per])
            if not kernels:
                continue
            ks = {}
            for v in per:
                for k, (c, d) in v[1].items():
                    ks.setdefault(k, [0, 0.0])
                    ks[k][0] += c
                    ks[k][1] += d
            row[key + "_kernels"] = sorted([[k, c // steps, round(d / steps, 4)] for k, (c, d) in ks.items()],
                                           key=lambda x: -x[2])
        rows.append(row)
    for p in ("forward", "backward"):
        attributed = [sum(v[0] for v in r[0].values()) for r in runs[p]]
        total = [r[1] for r in runs[p]]
        rows.append(dict(head, **{"pass": p, "total_ms": med(total), "busy_ms": med([r[2] for r in runs[p]]),
                                  "attributed_ms": med(attributed),
                                  "unattributed_ms": med([t - a for t, a in zip(total, attributed)]),
                                  "kernels": runs[p][0][3], "attribution": runs[p][0][5],
                                  "unattributed": sorted([[k, round(v, 4)] for k, v in runs[p][0][4].items()],
                                                         key=lambda x: -x[1])[:8],
                                  "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
                                  "torch": torch.__version__.split("+")[0]}))
    del module
    if device == "cuda":
        torch.cuda.empty_cache()
    return rows


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
    return {"model": name, "precision": precision, "batch": batch, **_hf_shape(name), "forward_ms": med(gpu_f), "backward_ms": med(gpu_b),
            "wall_forward_ms": med(wall_f), "wall_backward_ms": med(wall_b), "queue_ms": round(1e3 * max(queue, queue2), 1),
            "gpu_bound": bool(queue2 * 2.0e9 < cycles),  # false: a step queued longer than the sleep
            **kernels, "device": torch.cuda.get_device_name(), "torch": torch.__version__.split("+")[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(ZOO),
                    help="comma-separated zoo names (default: all but ncf), or tv:<name> for any torchvision classifier "
                         "(224 x 224 images, cross-entropy loss; tests/bench/export_heldout.py exports them)")
    ap.add_argument("--precisions", default="pytorch-fp32,bf16", help="comma-separated (default pytorch-fp32,bf16)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps (default 3)")
    ap.add_argument("--iters", type=int, default=7, help="timed steps; the median is printed (default 7)")
    ap.add_argument("--out", default=None, help="also append the lines to this file")
    ap.add_argument("--per-layer", action="store_true", help="device time per module (the CNNs; see the top)")
    ap.add_argument("--kernels", action="store_true", help="--per-layer: list each layer's kernels")
    ap.add_argument("--by-op", action="store_true",
                    help="device time per launching op and kernel, one line per pass (any model; see the top)")
    ap.add_argument("--batch", type=int, default=0, help="per-device batch (default: the zoo's, 32 / 8 / 4)")
    ap.add_argument("--seq", type=int, default=0, help="the HuggingFace models' sequence length (default 512 / 1024)")
    ap.add_argument("--attention", default="eager", choices=["eager", "sdpa"],
                    help="the HuggingFace models' attn_implementation (default eager, the zoo's default)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cpu: check --per-layer's bookkeeping without a GPU (CPU op times, batch 2)")
    a = ap.parse_args()
    ATTENTION[0] = a.attention
    if a.batch < 0 or a.seq < 0 or a.seq > 1024:
        sys.exit("--batch must be >= 0 and --seq in 0..1024 (GPT-2 has 1,024 positions, BERT 512)")
    SHAPE["batch"], SHAPE["seq"] = a.batch, a.seq
    if a.per_layer and a.by_op:
        sys.exit("--per-layer and --by-op: one at a time")
    if a.device == "cpu" and not a.per_layer:
        sys.exit("--device cpu: only with --per-layer")
    if a.device == "cuda" and not torch.cuda.is_available():
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
                if a.by_op:
                    rows = measure_ops(name, p, a.warmup)
                elif a.per_layer:
                    rows = measure_layers(name, p, a.warmup, a.device, a.kernels)
                else:
                    rows = [measure(name, p, a.warmup, a.iters, "cuda")]
            except SystemExit:
                raise
            except Exception as e:  # out of memory, a missing package: the row says so, the rest go on
                if a.device == "cuda":
                    torch.cuda.empty_cache()
                rows = [{"model": name, "precision": p, "error": f"{type(e).__name__}: " + str(e).split("\n")[0]}]
            for row in rows:
                line = json.dumps(row)
                print(line, flush=True)
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(line + "\n")


if __name__ == "__main__":
    main()
