"""Generates the model pairs of tests/compare (test venv, torch 2.x):

    make-compare-fixtures.py OUTDIR [--small]

(--small: only the four small module pairs and their inputs, for the GUI test)

- resnet18_traced.pt / resnet18_scripted.pt: the same ResNet-18 (random
  weights, seed 0, eval mode) traced at 1×3×224×224 and scripted;
- resnet18.onnx: its export by torch.onnx.export (BatchNorm folded into Conv);
- resnet18_dynamo.onnx (+ .data): the same by torch.onnx.export(dynamo=True),
  whose module scopes are node metadata;
- resnet18_corrupt_traced.pt: the traced copy with layer2.0.conv2.weight
  multiplied by 3 (the first layer whose values must differ);
- mobilenet_v2_traced.pt / mobilenet_v2_scripted.pt: MobileNetV2 with other
  random weights on each side (nothing to anchor on but module paths and
  structure);
- attention_traced.pt / attention_dynamo.onnx: LayerNorm, attention and an
  MLP, traced (one fused attention op) and exported by the dynamo exporter
  (attention spelled out, each Linear as MatMul + Add);
- reshape_cnn.onnx: a small CNN exported at batch 2 whose flatten is a
  Reshape to the literal [2, -1] (what `graft-cli edit --dynamic` repairs);
- four modules whose trace and script differ, each as NAME_traced.pt and
  NAME_scripted.pt: if_tensor (if on a tensor value), item (.item() baked
  into a constant), inplace_shape (in-place op, then a view to the traced
  batch), size_loop (a loop over x.size(0));
- if_tensor_positive.npy / if_tensor_negative.npy: inputs that take the
  traced branch and the other one;
- blocks_traced.pt / blocks_corrupt.onnx / blocks_input.npy: four
  Conv-BatchNorm-ReLU blocks and a head, traced, and exported to ONNX with
  block3's conv weight times 3 (module groups on both sides, values that
  agree up to block3 and diverge from there), and an input for both.

Files already present and newer than this script are kept.
"""
import copy
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import vision_models  # noqa: E402

OUT = sys.argv[1]
SMALL = "--small" in sys.argv[2:]
os.makedirs(OUT, exist_ok=True)
SCRIPT_TIME = os.path.getmtime(__file__)
warnings.simplefilter("ignore")


def fresh(name):
    path = os.path.join(OUT, name)
    return os.path.exists(path) and os.path.getmtime(path) > SCRIPT_TIME


def save(name, make):
    if fresh(name):
        return
    path = os.path.join(OUT, name)
    tmp = path + ".tmp"
    make(tmp)
    os.replace(tmp, path)


def save_ts(name, module):
    save(name, lambda path: torch.jit.save(module, path))


class IfTensor(nn.Module):
    """`if` on a tensor value: the trace keeps the branch its example took."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        if y.sum() > 0:
            z = torch.relu(y) * 2.0
        else:
            z = torch.tanh(y) - 1.0
        return z + 1.0


class ItemScale(nn.Module):
    """.item() becomes a Python number, baked into the trace."""

    def forward(self, x):
        s = x.abs().max().item()
        return torch.relu(x / s + 1.0)


class InPlaceShape(nn.Module):
    """An in-place op, then a view whose batch went through int()."""

    def forward(self, x):
        out = x.clone()
        out.mul_(2.0)
        return torch.sigmoid(out.view(int(x.shape[0]), -1))


class SizeLoop(nn.Module):
    """A Python loop over x.size(0): the trace unrolls it."""

    def forward(self, x):
        acc = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            acc = acc + x[i] * (i + 1)
        return torch.tanh(acc)


class AttentionBlock(nn.Module):
    """LayerNorm, attention, MLP: traced in eval mode, attention is the one
    fused aten::_native_multi_head_attention; the dynamo ONNX export spells
    it out (MatMul, Softmax, ...) and splits each Linear in MatMul + Add."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        y = self.ln(x)
        y, _ = self.attention(y, y, y, need_weights=False)
        x = x + y
        return x + self.mlp(x)


class ReshapeCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.fc(y.view(int(x.shape[0]), -1))


class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.block2 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.block3 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.block4 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))

    def forward(self, x):
        return self.head(self.block4(self.block3(self.block2(self.block1(x)))))


def export_onnx(module, example, path, **kwargs):
    try:
        torch.onnx.export(module, example, path, dynamo=False, opset_version=17, **kwargs)
    except TypeError:
        torch.onnx.export(module, example, path, opset_version=17, **kwargs)


def vision_fixtures():
    torch.manual_seed(0)
    resnet = vision_models.resnet18().eval()
    image = torch.randn(1, 3, 224, 224)
    save_ts("resnet18_traced.pt", torch.jit.trace(resnet, image, check_trace=False))
    save_ts("resnet18_scripted.pt", torch.jit.script(resnet))
    save("resnet18.onnx", lambda p: export_onnx(resnet, (image,), p, input_names=["x"], output_names=["logits"]))
    if not fresh("resnet18_dynamo.onnx"):
        # external data next to it: written in place, not through a temporary name
        torch.onnx.export(resnet, (image,), os.path.join(OUT, "resnet18_dynamo.onnx"), dynamo=True,
                          input_names=["x"], output_names=["logits"])
    corrupt = copy.deepcopy(resnet)
    corrupt.layer2[0].conv2.weight.mul_(3.0)
    save_ts("resnet18_corrupt_traced.pt", torch.jit.trace(corrupt, image, check_trace=False))

    # different random weights on each side: alignment without weight evidence
    torch.manual_seed(1)
    save_ts("mobilenet_v2_traced.pt", torch.jit.trace(vision_models.mobilenet_v2().eval(), image, check_trace=False))
    torch.manual_seed(2)
    save_ts("mobilenet_v2_scripted.pt", torch.jit.script(vision_models.mobilenet_v2().eval()))

    torch.manual_seed(3)
    block = AttentionBlock().eval()
    tokens = torch.randn(1, 5, 16)
    save_ts("attention_traced.pt", torch.jit.trace(block, tokens, check_trace=False))
    if not fresh("attention_dynamo.onnx"):
        torch.onnx.export(block, (tokens,), os.path.join(OUT, "attention_dynamo.onnx"), dynamo=True,
                          input_names=["x"], output_names=["y"])

    cnn = ReshapeCNN().eval()
    save("reshape_cnn.onnx", lambda p: export_onnx(cnn, (torch.randn(2, 3, 8, 8),), p, input_names=["x"],
                                                   output_names=["y"]))


def small_fixtures():
    for name, module, example in (("if_tensor", IfTensor(), torch.ones(2, 4)),
                                  ("item", ItemScale(), torch.randn(2, 3)),
                                  ("inplace_shape", InPlaceShape(), torch.randn(2, 3)),
                                  ("size_loop", SizeLoop(), torch.randn(3, 4))):
        module.eval()
        if name == "if_tensor":
            # the trace takes the then branch: make y.sum() > 0 for ones
            module.linear.weight.fill_(0.1)
            module.linear.bias.fill_(0.1)
        save_ts(name + "_traced.pt", torch.jit.trace(module, example, check_trace=False))
        save_ts(name + "_scripted.pt", torch.jit.script(module))

    # inputs on either side of the traced if: ones took the then branch
    save("if_tensor_positive.npy", lambda p: np.save(open(p, "wb"), np.ones((2, 4), np.float32)))
    save("if_tensor_negative.npy", lambda p: np.save(open(p, "wb"), -np.ones((2, 4), np.float32)))

    torch.manual_seed(1)
    blocks = Blocks().eval()
    image = torch.randn(1, 3, 16, 16)
    save_ts("blocks_traced.pt", torch.jit.trace(blocks, image, check_trace=False))
    corrupt = copy.deepcopy(blocks)
    corrupt.block3[0].weight.mul_(3)
    save("blocks_corrupt.onnx", lambda p: export_onnx(corrupt, (image,), p, input_names=["x"], output_names=["y"]))
    padded = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)).eval()
    valid = copy.deepcopy(padded)
    valid[0].padding = (0, 0)
    small = torch.randn(1, 3, 16, 16)
    save("pad_same.onnx", lambda p: export_onnx(padded, (small,), p, input_names=["x"], output_names=["y"]))
    save("pad_valid.onnx", lambda p: export_onnx(valid, (small,), p, input_names=["x"], output_names=["y"]))
    save("blocks_input.npy", lambda p: np.save(open(p, "wb"), image.numpy()))


with torch.no_grad():
    if not SMALL:
        vision_fixtures()
    small_fixtures()
