#!/usr/bin/env python3
"""Export models outside the zoo with their layers, for the compute model's held-out check.

    python3 tests/bench/export_heldout.py --out DIR [--models tv:mobilenet_v2,...] [--precisions pytorch-fp32,bf16]

Each model is built as tests/bench/compute_measure.py builds it (`tv:<name>`: a torchvision
classifier, 224 x 224 images, cross-entropy loss; the zoo's names: the zoo's torchvision and
HuggingFace modules, as measured there) and written by examples/export_pytorch_model.py's
export() at the measured batch, its layers traced on a sample of batch 2 on the CPU:
DIR/<name>-<precision>.json (the "tv:" prefix dropped). compute_measure.py measures the same
modules on a GPU (--out DIR/measured.jsonl); `bench_compute_table --exported DIR` prints the
compute model's forward and backward from each file's layers against those measurements. Nothing
here needs a GPU.
"""
import argparse
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "examples"))
import export_pytorch_model as ex  # noqa: E402

HELD_OUT = ["tv:mobilenet_v2", "tv:mobilenet_v3_large", "tv:efficientnet_b0", "tv:densenet121", "tv:resnext50_32x4d",
            "tv:regnet_y_1_6gf", "tv:convnext_tiny", "tv:vit_b_16", "tv:swin_t", "tv:shufflenet_v2_x1_0"]
GPT2 = {"gpt2": (12, 768), "gpt2-medium": (24, 1024)}
BERT = {"bert-base": (12, 768), "bert-large": (24, 1024)}


class _LM(torch.nn.Module):
    """GPT2LMHeadModel returning its logits (the loss layer is cross entropy over them)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        return self.m(input_ids=ids).logits


class _Bert(torch.nn.Module):
    """BertModel returning the last hidden state and the pooler's output, as measured."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        out = self.m(input_ids=ids)
        return out.last_hidden_state, out.pooler_output


def build(name):
    """(module, sample of batch 2, the measured batch, the loss)"""
    if name.startswith("tv:") or name.startswith("resnet") or name == "vgg16":
        import torchvision
        module = getattr(torchvision.models, name[3:] if name.startswith("tv:") else name)()
        return module, torch.randn(2, 3, 224, 224), 32, "cross_entropy"
    import transformers
    if name in GPT2:
        layers, hidden = GPT2[name]
        cfg = transformers.GPT2Config(n_embd=hidden, n_layer=layers, n_head=hidden // 64, n_positions=1024)
        cfg._attn_implementation = "eager"
        return _LM(transformers.GPT2LMHeadModel(cfg)), torch.randint(0, cfg.vocab_size, (1, 1024)), 4, "cross_entropy"
    if name in BERT:
        layers, hidden = BERT[name]
        cfg = transformers.BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=hidden // 64,
                                      intermediate_size=4 * hidden)
        cfg._attn_implementation = "eager"
        return _Bert(transformers.BertModel(cfg)), torch.randint(0, cfg.vocab_size, (1, 512)), 8, None
    raise SystemExit(f"--models: unknown model '{name}'")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory of the model files")
    ap.add_argument("--models", default=",".join(HELD_OUT), help="comma-separated (default: ten torchvision models)")
    ap.add_argument("--precisions", default="pytorch-fp32,bf16")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    for name in [m for m in a.models.split(",") if m]:
        module, sample, batch, loss = build(name)
        module.train()
        for p in [p for p in a.precisions.split(",") if p]:
            short = name[3:] if name.startswith("tv:") else name
            path = os.path.join(a.out, f"{short}-{p}.json")
            try:
                doc = ex.export(module, path, short, batch_per_device=batch, sample_input=sample, precision=p, loss=loss)
                print(f"{path}: {len(doc['tensors'])} tensors, {len(doc['layers'])} layers", flush=True)
            except Exception as e:  # the others go on
                print(f"{path}: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
