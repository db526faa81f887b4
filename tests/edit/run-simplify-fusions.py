#!/usr/bin/env python3
"""The simplifier's fusions into the opset's own operators, on library models
exported here by both of torch's exporters (random weights, from configs):

- GPT-2 (transformers) by torch.export's exporter at opset 20: --fuse-gelu makes
  its tanh GELUs (Mul/Pow/Mul/Add/Mul/Tanh/Add/Mul) Gelu(approximate=tanh).
- BERT (transformers) by the TorchScript exporter at opset 17: --fuse-gelu fuses
  nothing and says the opset has no Gelu (the erf GELUs stay); the same file
  raised to opset 20 by onnx's version converter gets Gelu for them, raised to
  opset 23 Attention for its MatMul/Mul/Add/Softmax/MatMul too.
- Llama (transformers) by torch.export's exporter, raised to opset 23:
  --fuse-rms-norm makes its Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul/Mul
  RMSNormalization, --fuse-attention its decomposed attention Attention; at its
  own opset 20 both say why they did nothing.
- segment-anything's image encoder by the TorchScript exporter at opset 17: its
  neck's LayerNorm2d (mean and variance over the channels, by hand) becomes
  LayerNormalization between two Transposes with --fuse-layer-norm.

Every result: the fused op count as said, fewer nodes, onnx.checker accepts it and
onnxruntime gives the original's outputs within 1e-5 of their largest
magnitude; --simplify on it passes its own runtime check.

Usage: run-simplify-fusions.py GRAFT_CLI
Prints TAP.
"""
import os
import sys

import numpy as np
import onnx

from simplify_checks import edit, ops, same_outputs
from tap import plan, skip, tap

BUILD = os.environ["GRAFT_BUILD_DIR"]
OUT = os.path.join(BUILD, "tests", "edit", "simplify-fusions-out")


def raise_opset(src, dst, opset):
    from onnx import version_converter
    onnx.save(version_converter.convert_version(onnx.load(src), opset), dst)


def token_ids(shape, seed):
    return np.random.default_rng(seed).integers(0, 100, shape).astype(np.int64)


# --- exports -------------------------------------------------------------------------------


def export_gpt2(path):
    import torch
    import transformers
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=32, use_cache=False)
    model = transformers.GPT2Model(config).eval()
    torch.onnx.export(HiddenStates(model), (torch.randint(0, 100, (2, 16)),), path, dynamo=True, opset_version=20,
                      input_names=["input_ids"], optimize=True)
    return {"input_ids": token_ids((2, 16), 1)}


class HiddenStates:
    """A transformers model called with input_ids, giving its last hidden state."""

    def __new__(cls, model):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, input_ids):
                return self.model(input_ids=input_ids).last_hidden_state

        return Wrapped().eval()


def export_bert(path):
    import torch
    import transformers
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, max_position_embeddings=32, use_cache=False)
    model = transformers.BertModel(config).eval()
    model.config._attn_implementation = "eager"   # as the zoo exports it: MatMul, Mul, Add, Softmax, MatMul
    torch.onnx.export(HiddenStates(model), (torch.randint(0, 100, (2, 16)),), path, dynamo=False, opset_version=17,
                      input_names=["input_ids"])
    return {"input_ids": token_ids((2, 16), 2)}


def export_llama(path):
    import torch
    import transformers
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                      use_cache=False)
    model = transformers.LlamaModel(config).eval()   # attention by F.scaled_dot_product_attention
    torch.onnx.export(HiddenStates(model), (torch.randint(0, 100, (2, 16)),), path, dynamo=True, opset_version=20,
                      input_names=["input_ids"], optimize=True)
    return {"input_ids": token_ids((2, 16), 3)}


def export_sam(path):
    import torch
    from segment_anything.modeling import ImageEncoderViT
    torch.manual_seed(0)
    model = ImageEncoderViT(img_size=64, patch_size=16, embed_dim=64, depth=2, num_heads=2, out_chans=32,
                            use_rel_pos=True, window_size=2, global_attn_indexes=(1,)).eval()
    with torch.no_grad():
        for module in model.neck:   # LayerNorm2d starts at ones and zeros: make its scale and shift count
            if hasattr(module, "weight") and module.weight.dim() == 1:
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
    torch.onnx.export(model, (torch.randn(1, 3, 64, 64),), path, dynamo=False, opset_version=17,
                      input_names=["image"])
    return {"image": np.random.default_rng(4).standard_normal((1, 3, 64, 64)).astype(np.float32)}


def exported(name, export):
    path = os.path.join(OUT, name + ".onnx")
    try:
        return path, export(path)
    except Exception as error:  # a library or exporter that cannot build the model here
        skip(f"{name}: the export failed here: {type(error).__name__}: {str(error)[:300]}")
        return None, None


# --- checks --------------------------------------------------------------------------------


def fused(cli, name, src, feeds, option, want):
    """option fuses into the ops of want ({op: count}); the result is valid and equal."""
    dst = os.path.join(OUT, f"{name}{option}.onnx")
    result = edit(cli, src, dst, option)
    log = result.stdout + result.stderr
    if not tap(result.returncode == 0, f"{name}: {option} exits 0", log):
        return
    before, after = ops(src), ops(dst)
    got = {op: after[op] - before[op] for op in want}
    tap(got == want and sum(after.values()) < sum(before.values()),
        f"{name}: {option} adds {want} ({sum(before.values())} -> {sum(after.values())} nodes)", f"{got}\n{log}")
    try:
        onnx.checker.check_model(onnx.load(dst), full_check=True)
        checked = ""
    except Exception as error:
        checked = str(error)
    tap(checked == "", f"{name}{option}: onnx.checker accepts the result", checked)
    difference = same_outputs(src, dst, feeds)
    tap(difference == "", f"{name}{option}: onnxruntime gives the original's outputs", difference)
    simplified = os.path.join(OUT, f"{name}{option}-simplified.onnx")
    result = edit(cli, dst, simplified, "--simplify")
    tap(result.returncode == 0 and "checked: the outputs equal" in result.stdout,
        f"{name}{option}: --simplify on the result passes its runtime check", result.stdout + result.stderr)


def left_alone(cli, name, src, option, opset, op):
    dst = os.path.join(OUT, f"{name}{option}-alone.onnx")
    result = edit(cli, src, dst, option)
    tap(result.returncode == 0 and sum(ops(dst).values()) == sum(ops(src).values())
        and f"opset {opset} has no {op}" in result.stdout,
        f"{name}: at opset {opset} {option} leaves the graph alone and says why", result.stdout + result.stderr)


def main():
    cli = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)

    src, feeds = exported("gpt2-dynamo", export_gpt2)
    if src:
        fused(cli, "gpt2-dynamo", src, feeds, "--fuse-gelu", {"Gelu": 2, "Tanh": -2})
        left_alone(cli, "gpt2-dynamo", src, "--fuse-attention", 20, "Attention")

    src, feeds = exported("bert-ts", export_bert)
    if src:
        left_alone(cli, "bert-ts", src, "--fuse-gelu", 17, "Gelu")
        raised = os.path.join(OUT, "bert-ts-opset20.onnx")
        raise_opset(src, raised, 20)
        fused(cli, "bert-ts-opset20", raised, feeds, "--fuse-gelu", {"Gelu": 2, "Erf": -2})
        raised = os.path.join(OUT, "bert-ts-opset23.onnx")
        raise_opset(src, raised, 23)
        fused(cli, "bert-ts-opset23", raised, feeds, "--fuse-attention", {"Attention": 2, "Softmax": -2})

    src, feeds = exported("llama-dynamo", export_llama)
    if src:
        left_alone(cli, "llama-dynamo", src, "--fuse-rms-norm", 20, "RMSNormalization")
        raised = os.path.join(OUT, "llama-dynamo-opset23.onnx")
        raise_opset(src, raised, 23)
        fused(cli, "llama-dynamo-opset23", raised, feeds, "--fuse-rms-norm", {"RMSNormalization": 5, "Sqrt": -5})
        fused(cli, "llama-dynamo-opset23", raised, feeds, "--fuse-attention", {"Attention": 2, "Softmax": -2})

    src, feeds = exported("sam-ts", export_sam)
    if src:
        fused(cli, "sam-ts", src, feeds, "--fuse-layer-norm", {"LayerNormalization": 2, "Sqrt": -2, "Transpose": 4})


main()
plan()
