#!/usr/bin/env python3
"""examples/export_pytorch_model.py's layers: what the trace writes, read back by `autosync`.

    python3 tests/unit/export_layers.py <autosync> <work dir>

The toy model's layers field by field (kinds, shapes, bias, the first conv's missing input
gradient, the tensor each layer is attributed to, the loss over the logits); a sample of batch 2
scaled to 32 writes what a sample of 32 does, and so does a sequence-first one (batch_dim 1: an
LSTM and a transformer layer without batch_first, with an initial state); depthwise and grouped convolutions carry their
groups; under bf16 the ops fed by autocast's fp32 results are marked fp32_input and nothing is
under pytorch-fp32; frozen parameters and a no_grad region write weight_grad / input_grad false,
and the fine-tuned model costs less than the same model trained whole; a block under
torch.utils.checkpoint (reentrant or not) is recomputed, with the gradients of the plain model,
and an autograd Function's no_grad forward is still differentiated; autosync loads the file
and prices its layers (not FLOPs alone). With
torchvision importable, torchvision's ResNet-50 and VGG16 exported this way cost what the zoo's
hand-written descriptions of them cost, within 1 %. Exit 77 (skipped) without torch.
"""
import json
import os
import subprocess
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import setup  # noqa: E402

ex, autosync, work = setup()
import torch  # noqa: E402
import torch.utils.checkpoint  # noqa: E402
from torch import nn  # noqa: E402

torch.manual_seed(0)


def sample(n):
    return torch.randn(n, 3, 32, 32), torch.randint(0, 1000, (n,))


# --- the toy model, field by field (ToyNet's docstring draws it) ---------------------------------
toy = ex.ToyNet()
layers, generic = ex.trace_layers(toy, sample(2), batch_per_device=32, loss="cross_entropy")
assert generic == {}, generic
got = [(l["kind"], l["tensor"]) for l in layers]
# tensors: 0 conv1.weight, 1-2 bn1, 3-4 conv2, 5 embed, 6-7 fc; a layer goes to the parameter
# first used most recently (its own; for a weightless op, the one before it)
assert got == [("conv", 0), ("batch_norm", 2), ("activation", 2), ("conv", 4), ("activation", 4), ("avg_pool", 4),
               ("embedding", 5), ("copy", 5), ("linear", 7), ("loss", 7)], got
N = 32
conv1, bn1, relu1, conv2, relu2, pool, emb, cat, fc, loss = layers
assert (conv1["m"], conv1["n"], conv1["k"], conv1["elements"]) == (N * 32 * 32, 16, 27, N * 3 * 32 * 32), conv1
assert conv1["bias"] is False and conv1["input_grad"] is False  # the images need no gradient
assert (bn1["m"], bn1["n"], bn1["elements"]) == (N, 16, N * 16 * 32 * 32), bn1
assert relu1["elements"] == N * 16 * 32 * 32
assert (conv2["m"], conv2["n"], conv2["k"], conv2["elements"], conv2["bias"], conv2["input_grad"]) == \
    (N * 16 * 16, 32, 16 * 9, N * 16 * 32 * 32, True, True), conv2
assert (pool["elements"], pool["outputs"]) == (N * 32 * 16 * 16, N * 32), pool
assert (emb["m"], emb["n"], emb["elements"]) == (1000, 8, N * 8), emb
assert cat["elements"] == N * 40
assert (fc["m"], fc["n"], fc["k"], fc["bias"]) == (N, 10, 40, True), fc
assert loss["elements"] == N * 10
assert all("groups" not in l and "fp32_input" not in l for l in layers)

# a sample of 2 scaled to 32 writes what a sample of 32 does
direct, _ = ex.trace_layers(toy, sample(32), batch_per_device=32, loss="cross_entropy")
assert direct == layers
# export() traces the layers in the pass that measures the FLOPs and the ready order: the same layers
two = sample(2)
exported = ex.export(toy, os.path.join(work, "toy_once.json"), "toy", batch_per_device=32, sample_input=two, loss="cross_entropy")
assert exported["layers"] == ex.trace_layers(toy, two, batch_per_device=32, loss="cross_entropy")[0] == layers
assert [t["ready_order"] for t in exported["tensors"]] == [7, 5, 6, 3, 4, 2, 1, 0], exported["tensors"]  # fc, embed, conv2, bn1, conv1


# --- a sequence-first input: the batch is dim 1 (batch_dim) --------------------------------------
class SeqFirst(nn.Module):
    """Token ids (T, B) through an embedding, nn.LSTM and nn.TransformerEncoderLayer without
    batch_first, an optional initial LSTM state (layers, B, hidden), then a classifier."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)
        self.rnn = nn.LSTM(16, 32)
        self.enc = nn.TransformerEncoderLayer(32, 4, 64)
        self.fc = nn.Linear(32, 10)

    def forward(self, ids, state=None):
        h, _ = self.rnn(self.emb(ids), state)
        return self.fc(self.enc(h).mean(0))


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # (the encoder layer's note on batch_first)
    seq = SeqFirst()
T = 5
ids = lambda b: torch.randint(0, 100, (T, b))  # noqa: E731
seq_direct, _ = ex.trace_layers(seq, ids(8), batch_per_device=8, loss="cross_entropy", batch_dim=1)
seq_scaled, _ = ex.trace_layers(seq, ids(2), batch_per_device=8, loss="cross_entropy", batch_dim=1)
assert seq_scaled == seq_direct, [(a, b) for a, b in zip(seq_scaled, seq_direct) if a != b][:2]
state = (torch.zeros(1, 2, 32), torch.zeros(1, 2, 32))  # the state's batch grows with the ids' in the second trace
assert ex.trace_layers(seq, (ids(2), state), batch_per_device=8, loss="cross_entropy", batch_dim=1)[0] == seq_direct
emb = seq_direct[0]
assert (emb["kind"], emb["elements"]) == ("embedding", T * 8 * 16), emb
# read as batch-first, the 5 time steps were the batch: 8 / 5 of the sample, and one more step each
assert ex.trace_layers(seq, ids(2), batch_per_device=8, loss="cross_entropy")[0] != seq_direct
seq_doc = ex.export(seq, os.path.join(work, "seq_first.json"), "seq_first", batch_per_device=8, sample_input=ids(2),
                    loss="cross_entropy", batch_dim=1)
seq_full = ex.export(seq, os.path.join(work, "seq_first8.json"), "seq_first", batch_per_device=8, sample_input=ids(8),
                     loss="cross_entropy", batch_dim=1)
assert seq_doc["layers"] == seq_full["layers"] == seq_direct
assert seq_doc["forward_flops"] == seq_full["forward_flops"] > 0
assert [t["backward_flops"] for t in seq_doc["tensors"]] == [t["backward_flops"] for t in seq_full["tensors"]]
for bad, says in ((2, "batch_dim 2: the sample's first tensor has 2 dimension(s)"), (-1, "batch_dim must be an integer >= 0")):
    try:
        ex.trace_layers(seq, ids(2), batch_per_device=8, batch_dim=bad)
        raise AssertionError(f"batch_dim {bad} was accepted")
    except ValueError as e:
        assert says in str(e), e


# --- depthwise and grouped convolutions -----------------------------------------------------------
class Separable(nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
        self.grouped = nn.Conv2d(32, 64, 3, padding=1, groups=4, bias=False)

    def forward(self, x):
        return self.grouped(self.dw(x))


sep, _ = ex.trace_layers(Separable(), torch.randn(2, 32, 8, 8))
assert [(l["kind"], l.get("groups"), l["n"], l["k"]) for l in sep] == [("conv", 32, 32, 9), ("conv", 4, 64, 72)], sep


# --- autocast's fp32 results under bf16 -----------------------------------------------------------
class PreNorm(nn.Module):
    """x + fc2(gelu(fc1(norm(x)))): the linear after the norm and the residual add take fp32."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 16)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


for precision in ("bf16", "pytorch-fp32"):
    ls, _ = ex.trace_layers(PreNorm(), torch.randn(2, 8, 16), precision)
    kinds = [l["kind"] for l in ls]
    assert kinds == ["layer_norm", "linear", "activation", "linear", "add"], kinds
    flags = [bool(l.get("fp32_input")) for l in ls]
    # layer norm's output is fp32 (autocast's fp32 list): fc1 casts it; fc1's and fc2's outputs are
    # 16-bit; the add meets the fp32 input x
    want = [False, True, False, False, True] if precision == "bf16" else [False] * 5
    assert flags == want, (precision, flags)
    assert ls[1]["bias"] and ls[3]["bias"] and ls[1]["m"] == 16 and ls[1]["k"] == 16 and ls[1]["n"] == 64, ls[1]


# --- frozen parameters and no_grad regions: the gradients backward does not compute -------------------
class Finetune(nn.Module):
    """A frozen stem (conv, batch norm, relu), a trained conv, a frozen layer norm and linear, a
    frozen embedding, a no_grad branch, and a trained head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.norm = nn.LayerNorm(8)
        self.mid = nn.Linear(8, 8)
        self.table = nn.Embedding(100, 8)
        self.side = nn.Linear(8, 8)
        self.head = nn.Linear(8, 10)
        for m in (self.stem, self.norm, self.mid, self.table):
            for p in m.parameters():
                p.requires_grad_(False)

    def forward(self, x, ids):
        h = self.conv(self.stem(x)).mean(dim=(2, 3))  # the trained conv's input needs no gradient
        h = self.mid(self.norm(h)) + self.table(ids)    # frozen, but their inputs need gradients
        with torch.no_grad():
            s = self.side(h)                            # trainable, but in a no_grad region
        return self.head(h * torch.sigmoid(s))


ft_model = Finetune()
ft, _ = ex.trace_layers(ft_model, (torch.randn(2, 3, 8, 8), torch.randint(0, 100, (2,))), loss="cross_entropy")
grads = [(l["kind"], l.get("input_grad", True), l.get("weight_grad", True), l.get("bias_grad", True)) for l in ft]
assert grads == [("conv", False, False, False), ("batch_norm", False, False, False), ("activation", False, True, True),
                 ("conv", False, True, True), ("avg_pool", True, True, True),
                 ("layer_norm", True, False, False), ("linear", True, False, False), ("embedding", True, False, True),
                 ("add", True, True, True), ("linear", False, False, False), ("activation", False, True, True),
                 ("scale", True, True, True), ("linear", True, True, True), ("loss", True, True, True)], grads
# tensors: 0-1 conv, 2-3 side, 4-5 head (the trainable ones); the frozen stem comes before them all
assert [l["tensor"] for l in ft][:2] == [-1, -1] and ft[3]["tensor"] == 1 and ft[-2]["tensor"] == 5, ft
# weight_grad and bias_grad are written only where false, and only on the kinds with a weight or a
# bias (the frozen linear is a linear, its bias its own)
assert all(l.get("weight_grad", False) is False and l.get("bias_grad", False) is False for l in ft)
assert all("weight_grad" not in l and "bias_grad" not in l for l in ft if l["kind"] in ("activation", "avg_pool", "add", "scale", "loss"))
assert ft[6]["name"] == "mid:addmm" and ft[6]["bias"] and (ft[6]["m"], ft[6]["n"], ft[6]["k"]) == (2, 8, 8), ft[6]
ft_path, all_path = os.path.join(work, "finetune.json"), os.path.join(work, "trainable.json")
ft_sample = (torch.randn(2, 3, 8, 8), torch.randint(0, 100, (2,)))
ex.export(ft_model, ft_path, "finetune", batch_per_device=32, sample_input=ft_sample, loss="cross_entropy")
for p in ft_model.parameters():
    p.requires_grad_(True)
ex.export(ft_model, all_path, "trainable", batch_per_device=32, sample_input=ft_sample, loss="cross_entropy")
ft_doc, all_doc = json.load(open(ft_path)), json.load(open(all_path))
assert [t["name"] for t in ft_doc["tensors"]] == ["conv.weight", "conv.bias", "side.weight", "side.bias", "head.weight",
                                                  "head.bias"], ft_doc["tensors"]
assert len(all_doc["tensors"]) == 15
# all trained: only the no_grad region's linear computes no weight gradient, only the stem's input none
assert [l["name"] for l in all_doc["layers"] if "weight_grad" in l] == ["side:addmm"], all_doc["layers"]
assert [l["name"] for l in all_doc["layers"] if l.get("input_grad") is False] == ["stem.0:convolution", "side:addmm",
                                                                                  "model:sigmoid"], all_doc["layers"]


# linear probing: a trainable backbone cut off by .detach(), and an auxiliary head whose result is
# unused: backward reaches neither (nothing of them reaches the output), as PyTorch's own .grad says
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
        self.aux = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        f = self.backbone(x).mean(dim=(2, 3))
        self.aux(f)
        return self.head(f.detach())


probe, probe_x = Probe(), torch.randn(2, 3, 8, 8)
pl, _ = ex.trace_layers(probe, probe_x, loss="cross_entropy")
probe(probe_x).sum().backward()
assert {n for n, p in probe.named_parameters() if p.grad is not None} == {"head.weight", "head.bias"}
assert [l["name"] for l in pl if ex._has_backward(l)] == ["head:addmm", "loss"], pl
assert [(l["name"], l.get("weight_grad", True), l.get("bias_grad", True)) for l in pl if l["kind"] == "linear"] == \
    [("aux:addmm", False, False), ("head:addmm", True, True)], pl
assert pl[-2]["input_grad"] is False  # (the head's input is detached: its weights' gradients alone)


# --- activation checkpointing and autograd Functions ---------------------------------------------------
class Square(torch.autograd.Function):
    """A custom Function: its forward runs under no_grad, and backward differentiates through it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2.0 * g * x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return x + torch.relu(self.fc(self.norm(x)))


class Checkpointed(nn.Module):
    """a, then b under torch.utils.checkpoint (reentrant or not, or none), then c and a Function."""

    def __init__(self, mode):
        super().__init__()
        self.a, self.b, self.c = Block(), Block(), Block()
        self.mode = mode

    def forward(self, x):
        x = self.a(x)
        if self.mode is None:
            x = self.b(x)
        else:
            x = torch.utils.checkpoint.checkpoint(self.b, x, use_reentrant=self.mode == "reentrant")
        return Square.apply(self.c(x))


plain, _ = ex.trace_layers(Checkpointed(None), torch.randn(2, 16))
assert not any("recompute" in l for l in plain)
for mode in ("reentrant", "non-reentrant"):
    ck, _ = ex.trace_layers(Checkpointed(mode), torch.randn(2, 16))
    # the checkpointed block's layers are recomputed in backward; their gradients are those of the
    # plain model (the reentrant checkpoint's forward runs under no_grad, but is differentiated)
    assert [l["name"] for l in ck if l.get("recompute")] == ["b.norm:native_layer_norm", "b.fc:addmm", "b:relu", "b:add"], (mode, ck)
    assert [{k: v for k, v in l.items() if k != "recompute"} for l in ck] == plain, (mode, ck)
# the Function's product runs under no_grad and is differentiated: its gradient is computed
assert plain[-1]["name"] == "model:mul" and plain[-1]["input_grad"] is True, plain[-1]


class Stack(nn.Module):
    """Four checkpointed blocks over a frozen table's lookup, the lower two frozen, and a teacher
    block under no_grad: what backward runs again is only what needs a gradient."""

    def __init__(self, reentrant):
        super().__init__()
        self.table = nn.Embedding(100, 16).requires_grad_(False)
        self.blocks = nn.ModuleList(Block() for _ in range(4))
        self.teacher = Block()
        self.head = nn.Linear(16, 4)
        for b in self.blocks[:2]:
            b.requires_grad_(False)
        self.reentrant = reentrant

    def forward(self, ids):
        x = self.table(ids)
        for b in self.blocks:
            x = torch.utils.checkpoint.checkpoint(b, x, use_reentrant=self.reentrant)
        with torch.no_grad():
            t = torch.utils.checkpoint.checkpoint(self.teacher, x, use_reentrant=self.reentrant)
        return self.head(x + t)


for reentrant in (True, False):
    st = Stack(reentrant)
    ids = torch.randint(0, 100, (2, 3))
    sl, _ = ex.trace_layers(st, ids)
    block = lambda name: name.split(":")[0].split(".")[1]  # blocks.2.fc:addmm, blocks.2:relu -> 2
    trained = {block(l["name"]) for l in sl if l["name"].startswith("blocks.") and l["kind"] == "linear"
               and l.get("weight_grad", True)}
    again = {block(l["name"]) for l in sl if l.get("recompute") and l["name"].startswith("blocks.")}
    # ground truth: the parameters PyTorch gives a gradient, and the blocks it runs again
    runs = {}
    hooks = [b.register_forward_hook(lambda m, i, o, k=k: runs.__setitem__(k, runs.get(k, 0) + 1))
             for k, b in enumerate(st.blocks)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reentrant checkpoint's "None of the inputs have requires_grad"
        st(ids).sum().backward()
    for h in hooks:
        h.remove()
    got = {n.split(".")[1] for n, p in st.named_parameters() if p.grad is not None and n.startswith("blocks.")}
    rerun = {str(k) for k, v in runs.items() if v > 1}
    # reentrant: no input of a checkpoint needs a gradient, so no block is trained (PyTorch warns);
    # non-reentrant: blocks 2 and 3 are trained and run again, the frozen 0 and 1 not
    assert trained == got and again == rerun == ({"2", "3"} if not reentrant else set()), (reentrant, trained, got, again, rerun)
    assert not any(l.get("recompute") or l.get("weight_grad", True) and l["kind"] == "linear"
                   for l in sl if l["name"].startswith("teacher")), (reentrant, sl)
ck_path, plain_path = os.path.join(work, "checkpointed.json"), os.path.join(work, "plain.json")
ex.export(Checkpointed("non-reentrant"), ck_path, "checkpointed", batch_per_device=4096, sample_input=torch.randn(2, 16))
ex.export(Checkpointed(None), plain_path, "plain", batch_per_device=4096, sample_input=torch.randn(2, 16))


# --- autosync reads the file and prices its layers ----------------------------------------------------
def compute_of(model, precision=None):
    """forward + backward as autosync prices them (the iteration less the exposed communication)"""
    cmd = [autosync, "optimize", "--model", model, "--cluster", "dgx-h100-x2", "--json", "--budget", "20"]
    r = subprocess.run(cmd + (["--precision", precision] if precision else []), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    return res["predicted_iteration_s"] - res["predicted_exposed_s"]


path, flops_only = os.path.join(work, "toy.json"), os.path.join(work, "toy_flops.json")
ex.main(["--out", path, "--precision", "bf16"])
ex.main(["--out", flops_only, "--precision", "bf16", "--no-layers"])
doc = json.load(open(path))
assert doc["precision"] == "bf16" and len(doc["layers"]) == 10 and "layers" not in json.load(open(flops_only))
with_layers, without = compute_of(path), compute_of(flops_only)
# the fine-tuned model's frozen layers cost their forward alone: less than all of it trained
assert compute_of(ft_path) < compute_of(all_path), (compute_of(ft_path), compute_of(all_path))
# checkpointing adds the block's forward to backward: more than without, less than a second forward pass
ck_time, plain_time = compute_of(ck_path), compute_of(plain_path)
assert plain_time < ck_time < plain_time * 4.0 / 3.0, (ck_time, plain_time)
# ten layers of at least one 4 us kernel each way; the FLOPs alone take under a microsecond
assert with_layers > 20 * 4e-6 > 50 * without, (with_layers, without)

try:
    import torchvision
except ImportError:
    torchvision = None
if torchvision is not None:
    for name in ("resnet50", "vgg16"):
        for precision in ("pytorch-fp32", "bf16"):
            out = os.path.join(work, f"{name}-{precision}.json")
            ex.export(getattr(torchvision.models, name)(), out, name, batch_per_device=32,
                      sample_input=torch.randn(2, 3, 224, 224), precision=precision, loss="cross_entropy")
            exported, zoo = compute_of(out), compute_of(name, precision)
            print(f"{name} {precision}: exported {exported * 1e3:.3f} ms, the zoo's {zoo * 1e3:.3f} ms")
            assert abs(exported / zoo - 1.0) < 0.01, (name, precision, exported, zoo)
else:
    print("torchvision is not importable: the comparison with the zoo's ResNet-50 and VGG16 is skipped")
print(f"ok: toy {len(layers)} layers, {with_layers * 1e3:.3f} ms with layers, {without * 1e6:.2f} us from FLOPs alone")
