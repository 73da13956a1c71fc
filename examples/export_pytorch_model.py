#!/usr/bin/env python3
"""Export a PyTorch module's gradients to an autosync model JSON.

    python3 examples/export_pytorch_model.py                      # a built-in toy CNN
    python3 examples/export_pytorch_model.py --model resnet50     # torchvision, when importable
    python3 examples/export_pytorch_model.py --out toy.json --batch 64
    python3 examples/export_pytorch_model.py --model resnet50 --profile --precision bf16   # measured compute

Or from your own code:

    from export_pytorch_model import export
    export(my_module, "my_model.json", "my_model", batch_per_device=32,
           sample_input=torch.randn(4, 3, 224, 224))

Output (the format <autosync/io/json.hpp> reads; one entry per trainable parameter, in
`named_parameters()` order, i.e. forward order):

    {"name": "toy_cnn", "batch_per_device": 32, "forward_flops": 1.2e10, "source": "...",
     "tensors": [{"name": "conv1.weight", "shape": [16, 3, 3, 3], "dtype": "f32",
                  "sparse": false, "sparse_density": 1.0, "backward_flops": 1.2e9}, ...]}

FLOPs (only with a sample input; FLOPs = 2 x multiply-adds, the same rules as
include/autosync/zoo/models.hpp):

    Conv{1,2,3}d  forward F = 2 * (Cin/groups) * prod(kernel) * numel(output); backward 2F on the weight
    Linear        forward F = 2 * in * out * rows;                          backward 2F on the weight
    bias          forward and backward = numel(output) (the add; the sum of dY)
    *Norm         over N output elements: forward 5N; backward weight 9N, bias N
    Embedding     forward and backward = lookups * width (gather; scatter-add)

Forward hooks measure the layers on `sample_input`; when `batch_per_device` differs from the
sample's batch (dim 0), every count is scaled by batch_per_device / sample batch, so a small
sample can describe a large batch. Work done outside these modules (functional matmuls such as
attention scores, activations, pooling) is not counted. A sparse embedding (`sparse=True`)
gets sparse_density = min(1, distinct rows touched x scale / rows), the touched rows measured on
the sample. With a sample the script also runs one backward pass and records the order in which
each parameter's gradient became ready ("ready_order", 0 = first); that order is emitted only
when every trainable parameter received a gradient. The module's parameters, gradients and
buffers (e.g. BatchNorm running statistics) are restored afterwards.

Profile (--profile, or export(..., profile=profile(module, sample))): runs forward and backward
on the device (CUDA when available, else the CPU) at the sample's batch, `--warmup` untimed and
`--iters` timed steps, and records the median forward time, backward time, and for every
parameter the time after backward starts at which its gradient was ready (a gradient hook; on
CUDA an event recorded in the hook, so the times are the device's). They are written as
"measured_forward", "measured_backward", "measured_on" and each tensor's "ready_time"; autosync's
timeline then uses them instead of its compute model (include/autosync/cost/compute.hpp).
--precision bf16|fp16 runs under torch.autocast, tf32 enables TF32 matmuls and convolutions,
fp32 disables both, pytorch-fp32 (the default) leaves PyTorch's defaults; the precision is
written as "precision". With --profile the sample batch is --batch: the times are the batch's.
"""

import argparse
import json
import math
import statistics
import sys
import time

import torch
from torch import nn

_DTYPES = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float64: "f64",
    torch.int32: "i32",
    torch.int64: "i64",
}

_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm,
          nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)
_EMBEDDINGS = (nn.Embedding, nn.EmbeddingBag)


def _first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        for v in value:
            t = _first_tensor(v)
            if t is not None:
                return t
    if isinstance(value, dict):
        for v in value.values():
            t = _first_tensor(v)
            if t is not None:
                return t
    # HuggingFace ModelOutput and similar objects
    for attr in ("logits", "last_hidden_state"):
        t = getattr(value, attr, None)
        if isinstance(t, torch.Tensor):
            return t
    return None


class _Meter:
    """Forward hooks that add each layer's FLOPs to its parameters' names."""

    def __init__(self, module):
        self.forward = 0.0
        self.backward = {}   # parameter name -> backward FLOPs
        self.touched = {}    # parameter name -> set of embedding rows read
        self._handles = []
        owner = {id(p): n for n, p in module.named_parameters()}
        for _, m in module.named_modules():
            self._handles.append(m.register_forward_hook(self._hook_for(m, owner)))

    def _add(self, param, owner, backward):
        if param is not None and id(param) in owner:
            name = owner[id(param)]
            self.backward[name] = self.backward.get(name, 0.0) + backward

    def _hook_for(self, m, owner):
        def hook(mod, inputs, output):
            out = _first_tensor(output)
            if out is None:
                return
            n_out = float(out.numel())
            weight = getattr(mod, "weight", None)
            bias = getattr(mod, "bias", None)
            if isinstance(mod, _CONVS):
                f = 2.0 * (mod.in_channels // mod.groups) * float(math.prod(mod.kernel_size)) * n_out
                self.forward += f
                self._add(weight, owner, 2.0 * f)
            elif isinstance(mod, nn.Linear):
                f = 2.0 * mod.in_features * mod.out_features * (n_out / mod.out_features)
                self.forward += f
                self._add(weight, owner, 2.0 * f)
            elif isinstance(mod, _NORMS):
                self.forward += 5.0 * n_out
                self._add(weight, owner, 9.0 * n_out)
                self._add(bias, owner, n_out)
                return
            elif isinstance(mod, _EMBEDDINGS):
                self.forward += n_out
                self._add(weight, owner, n_out)
                if id(weight) in owner and inputs and isinstance(inputs[0], torch.Tensor):
                    rows = set(torch.unique(inputs[0]).tolist())
                    self.touched.setdefault(owner[id(weight)], set()).update(rows)
                return
            else:
                return
            if bias is not None:
                self.forward += n_out
                self._add(bias, owner, n_out)

        return hook

    def close(self):
        for h in self._handles:
            h.remove()


def _ready_order(module, output, params):
    """Positions at which each parameter's gradient became ready in one backward pass."""
    loss_src = _first_tensor(output)
    if loss_src is None or not loss_src.requires_grad:
        return None
    seen = {}
    counter = [0]
    handles = []
    for name, p in params:
        def hook(grad, name=name):
            seen[name] = counter[0]   # tied weights: the last contribution makes it ready
            counter[0] += 1
        handles.append(p.register_hook(hook))
    try:
        loss_src.float().sum().backward()
    finally:
        for h in handles:
            h.remove()
    if len(seen) != len(params):
        return None
    ranked = sorted(seen, key=lambda n: seen[n])
    return {name: i for i, name in enumerate(ranked)}


_PRECISIONS = ("pytorch-fp32", "fp32", "tf32", "bf16", "fp16")


def profile(module, sample_input, precision="pytorch-fp32", iters=5, warmup=2, device=None):
    """Measure forward, backward and each parameter's gradient-ready time (seconds; medians).

    Returns {"forward": s, "backward": s, "ready": {name: s}, "device": str, "precision": str}.
    The module is moved to `device` (default: CUDA when available) and moved back; its state and
    gradients are restored.
    """
    if precision not in _PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(_PRECISIONS)}, got '{precision}'")
    if iters < 1 or warmup < 0:
        raise ValueError("iters must be >= 1 and warmup >= 0")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    args = sample_input if isinstance(sample_input, tuple) else (sample_input,)
    args = tuple(a.to(dev) if isinstance(a, torch.Tensor) else a for a in args)
    home = next(module.parameters()).device
    saved_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    saved_grads = {n: (None if p.grad is None else p.grad.detach().clone()) for n, p in params}
    flags = None
    if cuda and precision in ("fp32", "tf32"):
        flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)

    def stamp():
        if cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def between(a, b):
        return a.elapsed_time(b) / 1e3 if cuda else b - a

    fwd, bwd, ready = [], [], {n: [] for n, _ in params}
    module.to(dev)
    try:
        for step in range(warmup + iters):
            for _, p in params:
                p.grad = None
            marks = {}
            handles = [p.register_hook(lambda g, n=n: marks.__setitem__(n, stamp())) for n, p in params]
            try:
                t0 = stamp()
                if dtype is not None:
                    with torch.autocast(device_type=dev.type, dtype=dtype):
                        out = module(*args)
                else:
                    out = module(*args)
                loss = _first_tensor(out).float().sum()
                t1 = stamp()
                loss.backward()
                t2 = stamp()
            finally:
                for h in handles:
                    h.remove()
            if cuda:
                torch.cuda.synchronize()
            missing = [n for n, _ in params if n not in marks]
            if missing:
                raise ValueError(f"parameter {missing[0]} received no gradient: a profile needs every trainable "
                                 "parameter to take part in the step")
            if step < warmup:
                continue
            fwd.append(between(t0, t1))
            bwd.append(between(t1, t2))
            for n, _ in params:
                ready[n].append(between(t1, marks[n]))
    finally:
        module.to(home)
        module.load_state_dict(saved_state)
        for n, p in params:
            p.grad = saved_grads[n]
        if flags is not None:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
    backward = statistics.median(bwd)
    name = torch.cuda.get_device_name(dev) if cuda else "CPU"
    return {"forward": statistics.median(fwd), "backward": backward,
            "ready": {n: min(max(statistics.median(v), 0.0), backward) for n, v in ready.items()},
            "device": f"{name}, PyTorch {torch.__version__}, {precision}", "precision": precision}


def export(module, path, name, batch_per_device=None, sample_input=None, source=None, measured=None):
    """Write `module`'s trainable parameters to `path` as an autosync model JSON.

    batch_per_device: the per-device batch the model trains with (default: the sample's dim 0,
        or 1 without a sample).
    sample_input: a tensor (or tuple of tensors) to run forward hooks on; enables FLOPs,
        sparse densities and ready_order.
    measured: what profile() returned: writes the measured forward/backward, every tensor's
        ready_time and the precision.
    Returns the dictionary that was written.
    """
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    if not params:
        raise ValueError("the module has no trainable parameters")

    backward, touched, forward, order = {}, {}, 0.0, None
    scale = 1.0
    if sample_input is not None:
        args = sample_input if isinstance(sample_input, tuple) else (sample_input,)
        sample_batch = int(_first_tensor(args).shape[0])
        if batch_per_device is None:
            batch_per_device = sample_batch
        scale = float(batch_per_device) / float(sample_batch)
        saved_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        saved_grads = {n: (None if p.grad is None else p.grad.detach().clone()) for n, p in params}
        for _, p in params:
            p.grad = None
        meter = _Meter(module)
        try:
            with torch.enable_grad():
                output = module(*args)
            order = _ready_order(module, output, params)
        finally:
            meter.close()
            module.load_state_dict(saved_state)
            for n, p in params:
                p.grad = saved_grads[n]
        backward = {k: v * scale for k, v in meter.backward.items()}
        touched = meter.touched
        forward = meter.forward * scale
    if batch_per_device is None:
        batch_per_device = 1

    modules = dict(module.named_modules())
    tensors = []
    for pname, p in params:
        if p.dtype not in _DTYPES:
            raise ValueError(f"parameter {pname}: dtype {p.dtype} has no autosync name")
        owner = modules.get(pname.rpartition(".")[0])
        sparse = bool(isinstance(owner, _EMBEDDINGS) and getattr(owner, "sparse", False))
        density = 1.0
        if sparse and pname in touched and p.shape[0] > 0:
            density = min(1.0, max(len(touched[pname]) * scale, 1.0) / float(p.shape[0]))
        entry = {
            "name": pname,
            "shape": [int(d) for d in p.shape],
            "dtype": _DTYPES[p.dtype],
            "sparse": sparse,
            "sparse_density": density,
            "backward_flops": float(backward.get(pname, 0.0)),
        }
        if order is not None:
            entry["ready_order"] = order[pname]
        if measured is not None:
            entry["ready_time"] = float(measured["ready"][pname])
        tensors.append(entry)

    if source is None:
        source = f"exported from PyTorch {torch.__version__} module {type(module).__name__}"
        source += (f"; FLOPs measured by forward hooks on a sample of batch {sample_batch}"
                   if sample_input is not None else "; FLOPs not measured (no sample input)")
    doc = {
        "name": name,
        "batch_per_device": int(batch_per_device),
        "forward_flops": float(forward),
        "source": source,
        "tensors": tensors,
    }
    if measured is not None:
        doc["precision"] = measured["precision"]
        doc["measured_forward"] = float(measured["forward"])
        doc["measured_backward"] = float(measured["backward"])
        doc["measured_on"] = measured["device"]
    head = {k: v for k, v in doc.items() if k != "tensors"}
    with open(path, "w", encoding="utf-8") as f:   # one tensor per line
        f.write(json.dumps(head)[:-1] + ', "tensors": [\n')
        f.write(",\n".join("  " + json.dumps(t) for t in tensors))
        f.write("\n]}\n")
    return doc


class ToyNet(nn.Module):
    """A small torchvision-free model: a CNN image path and a sparse embedding side input.

    image (N,3,32,32) -> conv1 3->16 3x3 -> bn1 -> relu -> conv2 16->32 3x3 stride 2 -> relu
                      -> global average pool (32) --+
    ids (N,)          -> embed (1000, 8, sparse) ----+-> concat (40) -> fc 40->10
    """

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.embed = nn.Embedding(1000, 8, sparse=True)
        self.fc = nn.Linear(40, 10)

    def forward(self, image, ids):
        x = torch.relu(self.bn1(self.conv1(image)))
        x = torch.relu(self.conv2(x)).mean(dim=(2, 3))
        return self.fc(torch.cat([x, self.embed(ids)], dim=1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="toy", help="'toy' or a torchvision.models name (needs torchvision)")
    ap.add_argument("--out", default=None, help="output path (default: <model>.json)")
    ap.add_argument("--batch", type=int, default=32, help="batch per device (default 32)")
    ap.add_argument("--sample-batch", type=int, default=2, help="batch of the measured sample (default 2)")
    ap.add_argument("--no-sample", action="store_true", help="write shapes only, no FLOPs")
    ap.add_argument("--profile", action="store_true",
                    help="measure forward, backward and each gradient's ready time at --batch on this machine's device")
    ap.add_argument("--precision", default="pytorch-fp32", choices=_PRECISIONS, help="precision of the profile")
    ap.add_argument("--iters", type=int, default=5, help="timed steps of the profile (default 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before them (default 2)")
    ap.add_argument("--device", default=None, help="device of the profile (default: cuda when available, else cpu)")
    a = ap.parse_args(argv)
    if a.profile and a.no_sample:
        ap.error("--profile needs a sample (drop --no-sample)")
    if a.profile:
        a.sample_batch = a.batch

    torch.manual_seed(0)
    if a.model == "toy":
        module = ToyNet()
        sample = (torch.randn(a.sample_batch, 3, 32, 32), torch.randint(0, 1000, (a.sample_batch,)))
    else:
        try:
            import torchvision
        except ImportError:
            sys.exit(f"--model {a.model} needs torchvision, which is not importable; use --model toy")
        module = getattr(torchvision.models, a.model)()
        sample = torch.randn(a.sample_batch, 3, 224, 224)
    out = a.out or f"{a.model}.json"
    measured = profile(module, sample, a.precision, a.iters, a.warmup, a.device) if a.profile else None
    doc = export(module, out, a.model, batch_per_device=a.batch, sample_input=None if a.no_sample else sample,
                 measured=measured)
    total = sum(t["backward_flops"] for t in doc["tensors"])
    print(f"{out}: {len(doc['tensors'])} tensors, "
          f"{sum(math.prod(t['shape']) for t in doc['tensors'])} parameters, "
          f"forward {doc['forward_flops']:.4g} FLOPs, backward {total:.4g} FLOPs per device per step")
    if measured is not None:
        print(f"  measured on {measured['device']}: forward {measured['forward'] * 1e3:.3f} ms, "
              f"backward {measured['backward'] * 1e3:.3f} ms (medians of {a.iters})")


if __name__ == "__main__":
    main()
