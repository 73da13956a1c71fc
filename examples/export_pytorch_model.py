#!/usr/bin/env python3
"""Export a PyTorch module's gradients to an autosync model JSON.

    python3 examples/export_pytorch_model.py                      # a built-in toy CNN
    python3 examples/export_pytorch_model.py --model resnet50     # torchvision, when importable
    python3 examples/export_pytorch_model.py --out toy.json --batch 64
    python3 examples/export_pytorch_model.py --model resnet50 --profile --precision bf16   # measured compute
    python3 examples/export_pytorch_model.py --model convnext_tiny --precision bf16        # layers for bf16 training

Or from your own code:

    from export_pytorch_model import export
    export(my_module, "my_model.json", "my_model", batch_per_device=32,
           sample_input=torch.randn(4, 3, 224, 224))

Output (the format <autosync/io/json.hpp> reads; one entry per trainable parameter, in
`named_parameters()` order, i.e. forward order):

    {"name": "toy_cnn", "batch_per_device": 32, "forward_flops": 1.2e10, "source": "...",
     "tensors": [{"name": "conv1.weight", "shape": [16, 3, 3, 3], "dtype": "f32",
                  "sparse": false, "sparse_density": 1.0, "backward_flops": 1.2e9}, ...],
     "layers": [{"name": "conv1:convolution", "kind": "conv", "tensor": 0, "m": 32768, "n": 16,
                 "k": 27, "elements": 98304, "bias": false, "input_grad": false}, ...]}

FLOPs (only with a sample input; FLOPs = 2 x multiply-adds, the same rules as
include/autosync/zoo/models.hpp):

    Conv{1,2,3}d  forward F = 2 * (Cin/groups) * prod(kernel) * numel(output); backward 2F on the weight
    Linear        forward F = 2 * in * out * rows;                          backward 2F on the weight
    bias          forward and backward = numel(output) (the add; the sum of dY)
    *Norm         over N output elements: forward 5N; backward weight 9N, bias N
    Embedding     forward and backward = lookups * width (gather; scatter-add)

Forward hooks measure the layers on `sample_input`; when `batch_per_device` differs from the
sample's batch (its first tensor's dim `batch_dim`: 0 by default, 1 for a sequence-first input
such as nn.LSTM's or nn.Transformer's without batch_first), every count is scaled by
batch_per_device / sample batch, so a small sample can describe a large batch. Work done outside these modules (functional matmuls such as
attention scores, activations, pooling) is not counted. A sparse embedding (`sparse=True`)
gets sparse_density = min(1, distinct rows touched x scale / rows), the touched rows measured on
the sample. With a sample the script also runs one backward pass and records the order in which
each parameter's gradient became ready ("ready_order", 0 = first); that order is emitted only
when every trainable parameter received a gradient. The module's parameters, gradients and
buffers (e.g. BatchNorm running statistics) are restored afterwards.

Layers (with a sample; --no-layers leaves them out): one forward pass on the sample runs under a
TorchDispatchMode that sees every ATen op below autograd, and each op that does work is written as
a layer of the compute model (include/autosync/model.hpp `layer`: convolution with its groups,
linear, batched matmul, fused attention, batch/layer norm, activation, residual add, elementwise
scale, copy, dropout, softmax, pooling, embedding), its shapes scaled from the sample's batch to
batch_per_device, attributed to the parameter whose gradient backward completes next. --loss
cross_entropy (the default here) adds a loss layer over the output (the logits). --precision names
the training precision: under bf16 / fp16 the dtypes are followed as CUDA autocast sets them, so
the ops fed by autocast's fp32 results (a layer norm's output, the fp32 residual stream) are marked
`fp32_input`. A layer whose weight is frozen (requires_grad False) is written "weight_grad": false,
one whose bias is frozen "bias_grad": false, one whose input needs no gradient "input_grad": false,
and an op of a torch.no_grad() region, or one whose result reaches no tensor of the module's
output (a branch cut off by .detach(), a result left unused), all three: backward runs none of
their kernels. The layers of a torch.utils.checkpoint call that needs some gradient are written
"recompute": true (backward runs their forward again); the forward of a custom
torch.autograd.Function (a reentrant checkpoint's too) runs under no_grad but is differentiated
when its backward node has inputs. autosync prices the layers on the cluster's device
(include/autosync/cost/compute.hpp) instead of FLOPs alone, which no real model reaches; ops
without a rule of their own are priced as plain elementwise ops and named in "source".

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
import collections
import json
import math
import statistics
import os
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


# ---- layers: what the compute model prices (include/autosync/model.hpp `layer`) ----------------
#
# One forward pass runs under a TorchDispatchMode, which sees every ATen op below autograd (what
# F.linear, nn.MultiheadAttention or a model's own forward() turn into). Each op that does work
# becomes a layer of its kind; views, tensor creation and ops without a floating-point result are
# skipped. The sample runs in fp32 wherever it lives; under `precision` bf16 / fp16 each tensor's
# dtype is followed as CUDA autocast would set it (its lower-precision list: products and
# convolutions give 16 bits; its fp32 list: norms, softmax, pow, ... give fp32; batch norm keeps
# its input's; anything else promotes), so the layers carry `fp32_input` where autocast's fp32
# results feed an op. A layer is attributed to the tensor whose gradient is completed next in
# backward: the parameter first used most recently in forward order, the layer's own if it is
# its first use.

_VIEWLIKE = {"lift_fresh", "lift_fresh_copy", "_local_scalar_dense", "item", "detach", "alias", "sym_size", "sym_stride",
             "is_nonzero", "_assert_async", "_has_same_storage_numel", "_unsafe_view", "_reshape_alias",
             # views without alias annotations (an LSTM/GRU cell's gates) and in-place metadata changes
             "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "t", "transpose", "squeeze", "unsqueeze",
             "as_strided", "swapdims", "swapaxes", "resize", "resize_as", "set"}
_CREATION = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
             "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "arange", "scalar_tensor", "rand", "rand_like",
             "randn", "randn_like", "randint", "randint_like", "normal", "uniform", "fill", "zero", "linspace", "eye"}
_FP32_LIST = {"native_layer_norm", "layer_norm", "native_group_norm", "group_norm", "_softmax", "softmax", "_log_softmax",
              "log_softmax", "pow", "exp", "log", "log1p", "log2", "log10", "expm1", "rsqrt", "reciprocal", "sum", "prod",
              "cumsum", "cumprod", "norm", "linalg_vector_norm", "nll_loss", "nll_loss_forward", "mse_loss", "l1_loss",
              "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy_with_logits", "softplus", "erfinv", "acos",
              "asin", "cosh", "sinh", "tan", "dist", "cdist", "renorm", "cosine_similarity"}
_LOW_LIST = {"convolution", "_convolution", "cudnn_convolution", "conv2d", "conv1d", "conv3d", "addmm", "mm", "bmm",
             "baddbmm", "addbmm", "matmul", "linear", "addmv", "mv", "prelu", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
             "_scaled_dot_product_flash_attention_for_cpu", "scaled_dot_product_attention"}
_ACTIVATIONS = {"relu", "gelu", "silu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "hardtanh", "leaky_relu", "elu",
                "selu", "celu", "mish", "softplus", "threshold", "clamp", "clamp_min", "clamp_max", "relu6", "glu", "erf"}
_COPIES = {"cat", "stack", "clone", "copy", "_to_copy", "index_select", "gather", "roll", "flip", "repeat", "pad",
           "constant_pad_nd", "reflection_pad2d", "replication_pad2d", "col2im", "im2col", "channel_shuffle",
           "pixel_shuffle", "_unsafe_index", "index"}
_AVG_POOLS = {"avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d",
              "adaptive_avg_pool3d", "_adaptive_avg_pool3d"}
_MAX_POOLS = {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices",
              "adaptive_max_pool2d", "adaptive_max_pool1d"}


def _saved_state(module):
    """A copy of module.state_dict() that load_state_dict() takes back, with the modules' version
    metadata (torchvision's MNASNet refuses a state without it)."""
    state = module.state_dict()
    saved = collections.OrderedDict((k, v.detach().clone()) for k, v in state.items())
    if hasattr(state, "_metadata"):
        saved._metadata = state._metadata
    # every buffer object (a forward may replace one), and a copy of the non-persistent ones, which
    # state_dict() leaves out
    saved._buffers_now = [(m, k, b, b.detach().clone() if k in getattr(m, "_non_persistent_buffers_set", ()) else None)
                          for m in module.modules() for k, b in m._buffers.items() if b is not None]
    return saved


def _restore_state(module, saved):
    for m, k, b, _ in saved._buffers_now:
        m._buffers[k] = b
    module.load_state_dict(saved)  # the parameters and persistent buffers, in place
    with torch.no_grad():
        for _, _, b, v in saved._buffers_now:
            if v is not None:
                b.copy_(v)


def _storage_key(t):
    if t.layout != torch.strided:  # sparse (torch.sparse.mm's adjacency), mkldnn: no storage of their own
        return ("tensor", id(t))
    try:
        return t.untyped_storage().data_ptr()
    except AttributeError:  # PyTorch 1.x
        return t.storage().data_ptr()


def _sample_batch(args, batch_dim):
    """The batch of a sample: its first tensor's size along `batch_dim`."""
    if not isinstance(batch_dim, int) or isinstance(batch_dim, bool) or batch_dim < 0:
        raise ValueError(f"batch_dim must be an integer >= 0, got {batch_dim!r}")
    t = _first_tensor(args)
    if t is None:
        raise ValueError("sample_input has no tensor")
    if t.dim() <= batch_dim:
        raise ValueError(f"batch_dim {batch_dim}: the sample's first tensor has {t.dim()} dimension(s), shape {tuple(t.shape)}")
    if int(t.shape[batch_dim]) < 1:
        raise ValueError(f"batch_dim {batch_dim}: the sample's batch is empty (shape {tuple(t.shape)})")
    return int(t.shape[batch_dim])


def _one_more(value, batch, batch_dim):
    """The sample with one more item along batch_dim (the first repeated) in every tensor of that
    batch, nested in tuples, lists and dicts too (an RNN's initial state); other values as they are."""
    if isinstance(value, torch.Tensor):
        if value.dim() > batch_dim and value.shape[batch_dim] == batch:
            return torch.cat([value, value.narrow(batch_dim, 0, 1)], dim=batch_dim)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_one_more(v, batch, batch_dim) for v in value)
    if isinstance(value, dict):
        return {k: _one_more(v, batch, batch_dim) for k, v in value.items()}
    return value


def _channels_last(x):
    """Whether a 4-D tensor is laid out NHWC (torch.channels_last) rather than NCHW."""
    return x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()


def _autograd_context():
    """(checkpoint, differentiated) for the op being traced, from the Python stack.

    checkpoint: the outermost torch.utils.checkpoint.checkpoint frame the op runs below (None: none).
    Reentrant or not, the code below it is what backward runs again, when its region needs any
    gradient (checkpoint_sequential runs its last segment itself, not checkpointed).
    differentiated: None outside any autograd Function's forward; else whether the outermost one is
    differentiated, i.e. its backward node has edges (it ran in grad mode on inputs that need
    gradients). A Function's forward runs under no_grad, and so does whatever it calls (another
    Function, a reentrant checkpoint's code), but backward differentiates through it when it is.
    A Function's forward is a frame whose first argument is its backward node (ctx), or, PyTorch 2's
    setup_context style, Function.apply's own frame (differentiated: a tensor argument needs a
    gradient)."""
    ckpt, diff, node = None, None, False
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        path = code.co_filename.replace(os.sep, "/")
        if path.endswith("torch/utils/checkpoint.py") and code.co_name == "checkpoint":
            ckpt = f
        elif path.endswith("torch/autograd/function.py") and code.co_name == "apply":
            if not node:  # (a forward with its ctx below, already judged by its node)
                diff = any(isinstance(a, torch.Tensor) and a.requires_grad for a in f.f_locals.get("args", ()))
            node = False
        elif code.co_argcount > 0:
            first = f.f_locals.get(code.co_varnames[0])
            if isinstance(first, torch.autograd.function.BackwardCFunction):
                diff, node = bool(getattr(first, "next_functions", ())), True
        f = f.f_back
    return ckpt, diff


_WEIGHTED = ("linear", "conv", "matmul", "batch_norm", "layer_norm", "embedding")


def _biased(layer):
    """Whether a traced layer has a bias of its own: a linear's or conv's `bias`, a norm's beta (a
    norm without one is written bias_grad false)."""
    return bool(layer.get("bias")) or layer["kind"] in ("batch_norm", "layer_norm")


def _has_backward(layer):
    """Whether backward computes any gradient of a traced layer (its flags: model.hpp)."""
    k = layer["kind"]
    return ((k != "embedding" and layer.get("input_grad", True)) or (k in _WEIGHTED and layer.get("weight_grad", True))
            or (_biased(layer) and layer.get("bias_grad", True)))


def _tensors_in(value):
    """The tensors of an op's arguments or results, or of a module's output: a tensor, or those in
    its lists, tuples and dicts (a HuggingFace ModelOutput is a dict)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v)


class _LayerTrace(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the layers of one forward pass (see above); `names` is the module stack."""

    def __init__(self, params, autocast, frozen=()):
        super().__init__()
        self.param_of = {_storage_key(p): i for i, (_, p) in enumerate(params)}
        self.frozen = {_storage_key(p) for p in frozen}  # parameters that take no gradient
        self.autocast = autocast
        self.low = {}          # storage -> True when autocast would hold it in 16 bits
        self.layers = []
        self.current = -1      # the parameter first used most recently
        self.used = set()
        self.noise = set()     # dropout masks being built (bernoulli_ on CPU: mask, scale, multiply)
        self.generic = {}      # ops priced as a generic elementwise op: name -> count
        self.last_linear = None  # (layer, its output's storage): a bias add that follows is its bias
        self.names = []
        self.region = None       # the checkpoint call the op being recorded runs below (a frame), if any
        self.regions = {}        # id(frame) -> (frame, number): the checkpoint calls seen (frames held: ids stay theirs)
        self.out = None          # the result of the op being recorded (settle: does it reach the output?)
        self.virtual = set()     # storages that would require a gradient (an autograd Function's no_grad forward)

    def _low(self, t):
        return self.low.get(_storage_key(t), False)

    def _param(self, t):
        return self.param_of.get(_storage_key(t))

    def _weight(self, t):
        """Whether t is a parameter of the module, trainable or frozen."""
        return t is not None and (self._param(t) is not None or _storage_key(t) in self.frozen)

    def _add(self, kind, op, params, inputs, **fields):
        new = sorted(p for p in params if p not in self.used)
        if new:
            self.used.update(new)
            self.current = new[-1]
        name = (self.names[-1] if self.names else "") or "model"
        layer = {"name": f"{name}:{op}", "kind": kind, "tensor": self.current}
        if self.region is not None:
            frame = self.regions.setdefault(id(self.region), (self.region, len(self.regions)))
            layer["_region"] = frame[1]
        layer["_out"] = self.out
        if self.autocast and inputs:
            floats = [t for t in inputs if t.is_floating_point() and not self._weight(t)]
            if kind in ("linear", "conv"):
                if floats and not self._low(floats[0]):
                    layer["fp32_input"] = True
            elif kind in ("activation", "add", "scale", "copy", "dropout"):
                if any(not self._low(t) for t in floats):
                    layer["fp32_input"] = True
        layer.update(fields)
        self.layers.append(layer)
        return layer

    def settle(self, output):
        """After the pass on a module whose result is `output`. A layer whose result reaches no
        tensor of the output through the autograd graph (a branch cut off by .detach(), a result
        left unused) has no backward: backward never gets there. Then each checkpoint call's layers
        are recomputed in backward when any of them needs a gradient (else nothing of the call is
        kept for backward: nothing runs again)."""
        roots = [t.grad_fn for t in _tensors_in(output) if t.grad_fn is not None]
        reached, nodes = set(), []  # (nodes: held, so that their ids stay theirs)
        stack = list(roots)
        while stack:
            n = stack.pop()
            if n is None or id(n) in reached:
                continue
            reached.add(id(n))
            nodes.append(n)
            stack.extend(f for f, _ in n.next_functions)
        for l in self.layers:
            fn = getattr(l.pop("_out", None), "grad_fn", None)
            if roots and fn is not None and id(fn) not in reached:
                l["input_grad"] = False
                if l["kind"] in _WEIGHTED:
                    l["weight_grad"] = False
                if _biased(l):
                    l["bias_grad"] = False
        self.out = None
        calls = {}
        for l in self.layers:
            r = l.pop("_region", None)
            if r is not None:
                calls.setdefault(r, []).append(l)
        for ls in calls.values():
            if any(_has_backward(l) for l in ls):
                for l in ls:
                    l["recompute"] = True
        self.regions.clear()
        self.region = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            self._record(func, args, kwargs, out)
        except Exception as e:  # a shape this trace does not know: say which op
            raise RuntimeError(f"layer trace: {func}: {type(e).__name__}: {e}") from e
        return out

    def _record(self, func, args, kwargs, out):
        op = func.overloadpacket.__name__
        base = op[:-1] if op.endswith("_") and not op.startswith("_") else op
        schema = func._schema
        outs = [t for t in _tensors_in(out)]
        ins = [t for t in _tensors_in(list(args) + list(kwargs.values()))]
        named = {a.name: v for a, v in zip(schema.arguments, args)}
        named.update(kwargs)
        ret = schema.returns[0] if schema.returns else None
        if ret is not None and ret.alias_info is not None and not ret.alias_info.is_write:
            return  # a view: its storage (and autocast's dtype) is its input's
        if ret is not None and ret.alias_info is None:  # a fresh result: no dropout mask, even where it
            for o in outs:                               # reuses the storage of a freed one
                self.noise.discard(_storage_key(o))
                self.virtual.discard(_storage_key(o))
        if not outs or base in _VIEWLIKE:
            return
        y = outs[0]
        self.out = y
        # autocast's dtype of the result (followed whatever the precision: cheap)
        if ret is not None and ret.alias_info is not None and ins:  # in place (h.mul_(gamma), x += y):
            low = self._low(ins[0])                                 # the tensor keeps its dtype
        elif base in _LOW_LIST:
            low = True
        elif base in _FP32_LIST or base == "embedding":
            low = False
        elif "batch_norm" in base:
            low = bool(ins) and self._low(ins[0])
        else:
            floats = [t for t in ins if t.is_floating_point() and t.dim() > 0]
            low = bool(floats) and all(self._low(t) for t in floats)
        for o in outs:
            if o.is_floating_point():
                self.low[_storage_key(o)] = low
        if not y.is_floating_point() or y.numel() == 0 or not ins or base in _CREATION:
            return
        # which gradients backward computes: none in a no_grad region (but an autograd Function's
        # forward, a checkpoint's included, runs under no_grad and is differentiated all the same);
        # a frozen parameter (requires_grad False) none of its own, nor does an input that needs none
        ckpt, diff = _autograd_context()
        self.region = ckpt
        on = torch.is_grad_enabled() if diff is None else diff
        params = [i for i in (self._param(t) for t in ins) if i is not None] if on else []
        # (inside an autograd Function's no_grad forward, what requires a gradient is followed here:
        # `virtual`, the results of ops on such tensors, which backward will differentiate)
        needs = lambda t: on and t is not None and (bool(t.requires_grad) or _storage_key(t) in self.virtual)
        grad = on and (any(needs(t) for t in ins if self._param(t) is None) or bool(params))
        if grad and not torch.is_grad_enabled():
            self.virtual.update(_storage_key(o) for o in outs)
        # the gradient flags that are not the default (true): the layer's input's, its weight's, its
        # bias's (a bias that exists: b, or a norm's, whose missing weight or bias takes none)
        flags = lambda x, w=None, weighted=False, b=None, biased=False: dict(
            ([("input_grad", False)] if not x else []) + ([("weight_grad", False)] if weighted and not w else []) +
            ([("bias_grad", False)] if biased and not b else []))
        key = _storage_key
        # a linear of more than two dimensions that PyTorch ran as a product and a bias add
        # (F.linear: matmul, then add): the add is the linear's bias, in its dtype
        if base == "add" and self.last_linear is not None and len(ins) == 2 and sum(map(self._weight, ins)) == 1:
            layer, at = self.last_linear
            bias = next(t for t in ins if self._weight(t))
            other = [t for t in ins if not self._weight(t)]
            if bias.dim() == 1 and other and key(other[0]) == at and not layer.get("bias"):
                layer["bias"] = True
                if not needs(bias):
                    layer["bias_grad"] = False
                self.last_linear = None
                if params and params[0] not in self.used:  # the bias's first use: the linear's, as for addmm
                    self.used.add(params[0])
                    self.current = max(self.current, params[0])
                    layer["tensor"] = self.current
                for o in outs:
                    self.low[key(o)] = self._low(other[0])
                return
        # dropout on the CPU: empty_like, bernoulli_ (the mask), div_ (its scale), mul (applied)
        if base == "bernoulli":
            self.noise.add(key(y))
            return
        if any(key(t) in self.noise for t in ins):
            if base == "mul":
                self._add("dropout", op, params, [t for t in ins if key(t) not in self.noise], elements=y.numel(),
                          **flags(grad))
            return
        if base in ("convolution", "_convolution", "cudnn_convolution", "conv2d", "conv1d", "conv3d"):
            x, w = named.get("input", args[0]), named.get("weight", args[1])
            b = named.get("bias")
            groups = int(named.get("groups", 1) or 1)
            transposed = bool(named.get("transposed", False))
            n = int(w.shape[1] * groups) if transposed else int(w.shape[0])
            k = int(w.shape[0] // groups if transposed else w.shape[1]) * math.prod(int(d) for d in w.shape[2:])
            extra = {"groups": groups} if groups > 1 and not transposed else {}
            # a transposed convolution is the input gradient of a convolution: one GEMM row per input position
            m = int(x.numel() // x.shape[1]) if transposed else int(y.numel() // n)
            self._add("conv", op, params, [x], m=m, n=n, k=int(k), elements=int(x.numel()),
                      bias=b is not None, input_grad=needs(x), channels_last=_channels_last(x), **extra,
                      **flags(True, needs(w), True, needs(b), b is not None))
            return
        if base in ("addmm", "mm", "addmv", "mv", "linear"):
            if base == "linear":
                x, w, b = named["input"], named["weight"], named.get("bias")
                mats = [x, w]
            else:
                if base in ("addmm", "addmv"):  # self (the bias), mat1 / mat, mat2 / vec
                    mats = [named.get("mat1", named.get("mat")), named.get("mat2", named.get("vec"))]
                    b = named.get("self")
                else:  # self, mat2 / vec
                    mats = [named["self"], named.get("mat2", named.get("vec"))]
                    b = None
            wi = [i for i, t in enumerate(mats) if self._weight(t)]
            if base == "linear" or wi:
                w = mats[1] if base == "linear" else mats[wi[-1]]
                x = mats[0] if base == "linear" or wi[-1] == 1 else mats[1]
                if base == "linear" or (wi[-1] == 0 and w.dim() == 2):  # W x: W is out x in
                    out_f, in_f = int(w.shape[0]), int(w.shape[-1])
                elif w.dim() < 2:  # X v: a parameter vector scores each row (one output)
                    out_f, in_f = 1, int(w.shape[0])
                else:  # X W: W is in x out
                    out_f, in_f = int(w.shape[-1]), int(w.shape[0])
                rows = int(y.numel() // max(out_f, 1))
                layer = self._add("linear", op, params, [x], m=rows, n=out_f, k=in_f,
                                  bias=self._weight(b), input_grad=needs(x),
                                  **flags(True, needs(w), True, needs(b), self._weight(b)))
                self.last_linear = (layer, key(y))
                return
            a1, a2 = mats
            self._add("matmul", op, params, [a1, a2], m=int(a1.shape[0]), n=int(a2.shape[-1]) if a2.dim() > 1 else 1,
                      k=int(a1.shape[-1]), **flags(needs(a1), needs(a2), True))
            return
        if base in ("bmm", "baddbmm"):
            a1, a2 = named["batch1" if base == "baddbmm" else "self"], named["batch2" if base == "baddbmm" else "mat2"]
            if self._weight(a2) and a2.stride(0) == 0:  # F.linear on a non-contiguous input: X W^T, W expanded
                b = named.get("self") if base == "baddbmm" else None
                bias = b is not None and self._weight(b)
                layer = self._add("linear", op, params, [a1], m=int(a1.shape[0] * a1.shape[1]), n=int(a2.shape[2]),
                                  k=int(a1.shape[2]), bias=bias, input_grad=needs(a1),
                                  **flags(True, needs(a2), True, needs(b), bias))
                self.last_linear = (layer, key(y))
                return
            self._add("matmul", op, params, [a1, a2], m=int(a1.shape[1]), n=int(a2.shape[2]), k=int(a1.shape[2]),
                      count=int(a1.shape[0]), **flags(needs(a1), needs(a2), True))
            return
        if "scaled_dot_product" in base:
            q, kk = named["query"], named["key"]
            causal = bool(named.get("is_causal", False))
            self._add("attention", op, params, [q], m=int(q.shape[-2]), n=int(kk.shape[-2]), k=int(q.shape[-1]),
                      count=int(q.numel() // (q.shape[-2] * q.shape[-1])), causal=causal,
                      **flags(needs(q) or needs(kk) or needs(named.get("value"))))
            return
        if "batch_norm" in base and "backward" not in base:
            x = ins[0]
            c = int(x.shape[1]) if x.dim() > 1 else 1
            self._add("batch_norm", op, params, [x], m=int(x.shape[0]), n=c, elements=int(x.numel()),
                      **flags(needs(x), needs(named.get("weight")), True, needs(named.get("bias")), True))
            return
        if base in ("native_layer_norm", "layer_norm", "native_group_norm", "group_norm", "_fused_rms_norm", "rms_norm"):
            x = ins[0]
            shape = {}
            if base in ("native_layer_norm", "layer_norm"):  # its rows and width (PyTorch's kernels: a block a row)
                width = math.prod(int(d) for d in named["normalized_shape"])
                if width > 0 and x.numel() % width == 0:
                    shape = {"m": int(x.numel() // width), "n": int(width)}
            self._add("layer_norm", op, params, [x], elements=int(x.numel()), **shape,
                      **flags(needs(x), needs(named.get("weight")), True, needs(named.get("bias")), True))
            return
        if base in ("embedding", "embedding_bag", "_embedding_bag"):
            w = named.get("weight", args[0])
            lookups = int(named["indices"].numel()) if "bag" in base else int(y.numel() // w.shape[1])
            self._add("embedding", op, params, [], m=int(w.shape[0]), n=int(w.shape[1]), elements=lookups * int(w.shape[1]),
                      **flags(True, needs(w), True))
            return
        if base in ("_softmax", "softmax", "_log_softmax", "log_softmax"):
            self._add("softmax", op, params, [ins[0]], elements=int(y.numel()), **flags(needs(ins[0])))
            return
        if base in ("native_dropout", "dropout", "feature_dropout", "alpha_dropout"):
            self._add("dropout", op, params, [ins[0]], elements=int(y.numel()), **flags(needs(ins[0])))
            return
        if base in _MAX_POOLS or base in _AVG_POOLS or (base in ("mean", "amax", "sum") and ins[0].dim() >= 3
                                                        and y.numel() < ins[0].numel()):
            kind = "max_pool" if base in _MAX_POOLS or base == "amax" else "avg_pool"
            x = ins[0]
            extra = {"channels_last": True} if kind == "max_pool" and _channels_last(x) else {}
            self._add(kind, op, params, [x], elements=int(x.numel()), outputs=int(y.numel()), **extra, **flags(needs(x)))
            return
        floats = [t for t in ins if t.is_floating_point()]
        elements = int(max([y.numel()] + [t._nnz() if t.is_sparse else t.numel() for t in floats]))
        if base in _ACTIVATIONS:
            self._add("activation", op, params, floats, elements=elements, input_grad=grad)
        elif base == "add" and len(floats) == 2 and floats[0].shape == floats[1].shape and not params:
            self._add("add", op, params, floats, elements=elements, input_grad=grad)
        elif base in _COPIES:
            self._add("copy", op, params, floats, elements=elements, input_grad=grad)
        else:
            if base not in ("add", "sub", "mul", "div", "where", "masked_fill", "rsub", "neg", "pow", "sqrt", "rsqrt",
                            "exp", "abs", "addcmul", "addcdiv", "lerp", "mean", "sum", "var", "var_mean", "std"):
                self.generic[op] = self.generic.get(op, 0) + 1
            self._add("scale", op, params, floats, elements=elements, input_grad=grad)


def _module_names(module, trace):
    """Forward pre/post hooks that keep trace.names the stack of running modules' names."""
    handles = []
    for name, m in module.named_modules():
        def pre(mod, inputs, name=name):
            trace.names.append(name)

        def post(mod, inputs, output):
            trace.names.pop()

        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    return handles


def _scaled(layer, s):
    """A layer traced at sample batch b, at batch b x s: its batch-proportional fields scaled."""
    if s == 1.0:
        return layer
    r = dict(layer)
    grow = lambda v: max(1, int(round(v * s)))
    kind = r["kind"]
    if kind in ("batch_norm", "layer_norm") and r.get("m"):  # elements stay m x the rest
        per = r["elements"] // r["m"]
        r["m"] = grow(r["m"])
        r["elements"] = r["m"] * per
        return r
    if kind in ("matmul", "attention") and r.get("count", 1) > 1:
        r["count"] = grow(r["count"])
    elif kind in ("linear", "conv", "matmul"):
        r["m"] = grow(r["m"])
    for f in ("elements", "outputs"):
        if r.get(f):
            r[f] = grow(r[f])
    return r


def _check_layer_options(precision, loss):
    if precision not in _PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(_PRECISIONS)}, got '{precision}'")
    if loss not in (None, "none", "cross_entropy"):
        raise ValueError(f"loss must be 'cross_entropy' or none, got '{loss}'")


def _traced_forward(module, args, precision):
    """One forward pass of `module` on `args` under the layer trace: (trace, output). The caller
    restores the module's state (_saved_state before, _restore_state after)."""
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    frozen = [p for p in module.parameters() if not p.requires_grad]
    trace = _LayerTrace(params, precision in ("bf16", "fp16"), frozen)
    handles = _module_names(module, trace)
    try:
        with torch.enable_grad(), trace:
            output = module(*args)
    finally:
        for h in handles:
            h.remove()
    trace.settle(output)
    return trace, output


def _layers_of(module, args, trace, output, precision, batch_per_device, loss, batch_dim=0):
    """trace_layers' result from the traced pass on `args`: its layers scaled to batch_per_device
    (a second trace tells the fields that grow with the batch), the loss layer after them."""
    sample_batch = _sample_batch(args, batch_dim)
    s = float(batch_per_device) / sample_batch if batch_per_device else 1.0
    layers = [_scaled(l, s) for l in trace.layers]
    if s != 1.0:
        # a second trace with one more sample (the first repeated): a field that grows by one sample's
        # worth is batch-proportional, one that stays (a Swin window mask or relative position table, an
        # instance norm's batch of 1) is not; a pass that takes another path keeps the proportional scaling
        more = _one_more(tuple(args), sample_batch, batch_dim)
        big, _ = trace_layers(module, more, precision, None, None, batch_dim)
        if len(big) == len(trace.layers) and all(a["name"] == b["name"] and a.keys() == b.keys()
                                                for a, b in zip(big, trace.layers)):
            grow = lambda v, w: max(1, int(round(v + (w - v) * (batch_per_device - sample_batch))))
            layers = [{k: (grow(v, l2[k]) if isinstance(v, int) and not isinstance(v, bool) and k != "tensor" and v != l2[k]
                           else v) for k, v in l.items()} for l, l2 in zip(trace.layers, big)]
    if loss == "cross_entropy":
        y = _first_tensor(output)
        if y is None:
            raise ValueError("loss cross_entropy: the module's output has no tensor (the logits)")
        layers.append({"name": "loss", "kind": "loss", "tensor": trace.current,
                       "elements": max(1, int(round(y.numel() * s))), **({} if y.requires_grad else {"input_grad": False})})
    return layers, trace.generic


def trace_layers(module, sample_input, precision="pytorch-fp32", batch_per_device=None, loss=None, batch_dim=0):
    """The layers of one forward pass of `module` on `sample_input` (model.hpp `layer`, in forward
    order, as JSON objects), scaled from the sample's batch (dim `batch_dim` of its first tensor) to
    `batch_per_device`; with `loss`
    "cross_entropy", a loss layer over the output's elements (the logits) after them. Returns
    (layers, generic): `generic` counts the ops priced as a plain elementwise op (no rule of their own)."""
    _check_layer_options(precision, loss)
    args = sample_input if isinstance(sample_input, tuple) else (sample_input,)
    _sample_batch(args, batch_dim)
    saved_state = _saved_state(module)
    try:
        trace, output = _traced_forward(module, args, precision)
    finally:
        _restore_state(module, saved_state)
    return _layers_of(module, args, trace, output, precision, batch_per_device, loss, batch_dim)


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
    saved_state = _saved_state(module)
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
        _restore_state(module, saved_state)
        for n, p in params:
            p.grad = saved_grads[n]
        if flags is not None:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
    backward = statistics.median(bwd)
    name = torch.cuda.get_device_name(dev) if cuda else "CPU"
    return {"forward": statistics.median(fwd), "backward": backward,
            "ready": {n: min(max(statistics.median(v), 0.0), backward) for n, v in ready.items()},
            "device": f"{name}, PyTorch {torch.__version__}, {precision}", "precision": precision}


def export(module, path, name, batch_per_device=None, sample_input=None, source=None, measured=None,
           precision=None, layers=True, loss=None, batch_dim=0):
    """Write `module`'s trainable parameters to `path` as an autosync model JSON.

    batch_per_device: the per-device batch the model trains with (default: the sample's batch,
        or 1 without a sample).
    batch_dim: the dimension of the batch in the sample's first tensor (default 0; 1 for a
        sequence-first input, e.g. nn.LSTM or nn.Transformer without batch_first); the sample's
        counts are scaled from its batch to batch_per_device along it.
    sample_input: a tensor (or tuple of tensors) to run forward hooks on; enables FLOPs,
        sparse densities, ready_order and the layers.
    measured: what profile() returned: writes the measured forward/backward, every tensor's
        ready_time and the precision.
    precision: the training precision (default: the profile's, else pytorch-fp32); written as
        "precision", and under bf16 / fp16 the layers say where autocast's fp32 results feed an op.
    layers: with a sample, write the forward pass's layers (trace_layers), which the compute model
        prices on any device; loss: "cross_entropy" adds a loss layer over the output (the logits).
    Returns the dictionary that was written.
    """
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    if not params:
        raise ValueError("the module has no trainable parameters")
    if precision is None:
        precision = measured["precision"] if measured is not None else "pytorch-fp32"
    if precision not in _PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(_PRECISIONS)}, got '{precision}'")
    if measured is not None and measured["precision"] != precision:
        raise ValueError(f"precision {precision} differs from the profile's ({measured['precision']})")

    backward, touched, forward, order, traced = {}, {}, 0.0, None, None
    scale = 1.0
    if sample_input is not None:
        args = sample_input if isinstance(sample_input, tuple) else (sample_input,)
        sample_batch = _sample_batch(args, batch_dim)
        if batch_per_device is None:
            batch_per_device = sample_batch
        scale = float(batch_per_device) / float(sample_batch)
        saved_state = _saved_state(module)
        saved_grads = {n: (None if p.grad is None else p.grad.detach().clone()) for n, p in params}
        for _, p in params:
            p.grad = None
        if layers:
            _check_layer_options(precision, loss)
        # one forward pass: its FLOPs (the meter's hooks), its layers (the trace), then one backward
        # for the ready order
        meter = _Meter(module)
        try:
            if layers:
                trace, output = _traced_forward(module, args, precision)
            else:
                with torch.enable_grad():
                    output = module(*args)
            meter.close()  # (before backward, which reruns a checkpoint's forward: no FLOPs twice)
            order = _ready_order(module, output, params)
        finally:
            meter.close()
            _restore_state(module, saved_state)
            for n, p in params:
                p.grad = saved_grads[n]
        backward = {k: v * scale for k, v in meter.backward.items()}
        touched = meter.touched
        forward = meter.forward * scale
        if layers:
            traced, generic = _layers_of(module, args, trace, output, precision, batch_per_device, loss, batch_dim)
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
    if precision != "pytorch-fp32" or measured is not None:
        doc["precision"] = precision
    if traced is not None:
        doc["layers"] = traced
        if generic:
            doc["source"] += "; priced as plain elementwise ops: " + ", ".join(f"{k} x{v}" for k, v in sorted(generic.items()))
    if measured is not None:
        doc["measured_forward"] = float(measured["forward"])
        doc["measured_backward"] = float(measured["backward"])
        doc["measured_on"] = measured["device"]
    head = {k: v for k, v in doc.items() if k not in ("tensors", "layers")}
    with open(path, "w", encoding="utf-8") as f:   # one tensor (layer) per line
        f.write(json.dumps(head)[:-1] + ', "tensors": [\n')
        f.write(",\n".join("  " + json.dumps(t) for t in tensors))
        if traced is not None:
            f.write('\n], "layers": [\n')
            f.write(",\n".join("  " + json.dumps(t) for t in traced))
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
    ap.add_argument("--precision", default="pytorch-fp32", choices=_PRECISIONS,
                    help="the training precision: of the layers and of the profile (default pytorch-fp32)")
    ap.add_argument("--loss", default="cross_entropy", choices=["cross_entropy", "none"],
                    help="the loss after the model's output, a layer of its own (default cross_entropy)")
    ap.add_argument("--no-layers", action="store_true", help="write no layers (FLOPs and the profile only)")
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
                 measured=measured, precision=a.precision, layers=not a.no_layers, loss=a.loss)
    total = sum(t["backward_flops"] for t in doc["tensors"])
    print(f"{out}: {len(doc['tensors'])} tensors, "
          f"{sum(math.prod(t['shape']) for t in doc['tensors'])} parameters, "
          f"forward {doc['forward_flops']:.4g} FLOPs, backward {total:.4g} FLOPs per device per step"
          + (f", {len(doc['layers'])} layers ({a.precision})" if "layers" in doc else ""))
    if measured is not None:
        print(f"  measured on {measured['device']}: forward {measured['forward'] * 1e3:.3f} ms, "
              f"backward {measured['backward'] * 1e3:.3f} ms (medians of {a.iters})")


if __name__ == "__main__":
    main()
