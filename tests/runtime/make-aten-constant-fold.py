"""Writes OUT/traced.pt, OUT/scripted.pt and OUT/exported.pt2 (torch.export):
convolutions followed by what DETR's FrozenBatchNorm2d computes at run time
from its buffers (scale = weight * (running_var + eps).rsqrt(), bias -
running_mean * scale, then x * scale + bias) [and a relu, or a residual
add and relu], a layer scale computed from a parameter (gamma.reshape(-1,
1, 1) / 2) after a convolution, a value computed from buffers that an
in-place add_ then changes (run after run the same), a scale computed
from the input, which must not fold, and Gemma's RMSNorm, whose scale
(1 + weight) is computed after the norm; for test-aten-constant-fold.c; and
an input OUT/x.npy with torch's output for it, OUT/y.npy. Usage:
make-aten-constant-fold.py OUT"""
import os
import sys

import numpy as np
import torch
from torch import nn


class FrozenBatchNorm2d(nn.Module):
    """DETR's (transformers' DetrFrozenBatchNorm2d): the statistics are
    buffers, the affine map computed from them at every call."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("weight", torch.rand(n) + 0.5)
        self.register_buffer("bias", torch.rand(n) - 0.5)
        self.register_buffer("running_mean", torch.rand(n) - 0.5)
        self.register_buffer("running_var", torch.rand(n) + 0.5)

    def forward(self, x):
        weight = self.weight.reshape(1, -1, 1, 1)
        bias = self.bias.reshape(1, -1, 1, 1)
        running_var = self.running_var.reshape(1, -1, 1, 1)
        running_mean = self.running_mean.reshape(1, -1, 1, 1)
        scale = weight * (running_var + 1e-5).rsqrt()
        bias = bias - running_mean * scale
        return x * scale + bias


class GemmaRMSNorm(nn.Module):
    """transformers' GemmaRMSNorm: the scale 1 + weight, computed after the
    normalisation."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n) - 0.5)

    def forward(self, x):
        x = x.float()
        out = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (out * (1.0 + self.weight.float())).type_as(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(4, 8, 3, padding=1, bias=False)
        self.n1 = FrozenBatchNorm2d(8)                     # conv → frozen norm → relu
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.n2 = FrozenBatchNorm2d(8)                     # depthwise conv with a bias → frozen norm → + x → relu
        self.c3 = nn.Conv2d(8, 12, 1)
        self.gamma = nn.Parameter(torch.rand(12) + 0.5)    # a layer scale: conv → * gamma / 2
        self.register_buffer("offset", torch.rand(12))
        self.c4 = nn.Conv2d(12, 12, 3, padding=1)          # its scale comes from the input: not folded
        self.norm = GemmaRMSNorm(10)                       # over the maps' rows

    def forward(self, x):
        x = torch.relu(self.n1(self.c1(x)))
        x = torch.relu(self.n2(self.c2(x)) + x)
        x = self.c3(x) * (self.gamma.reshape(-1, 1, 1) / 2)
        shift = self.offset * 2
        shift.add_(1)                                      # in place on a value computed from a buffer
        x = x + shift.reshape(1, -1, 1, 1)
        return self.norm(self.c4(x) * x.mean())


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    net = Net()
    net.eval()
    x = torch.randn(2, 4, 10, 10)
    with torch.no_grad():
        np.save(os.path.join(out, "x.npy"), x.numpy())
        np.save(os.path.join(out, "y.npy"), net(x).numpy())
        torch.jit.save(torch.jit.trace(net, x), os.path.join(out, "traced.pt"))
        torch.jit.save(torch.jit.script(net), os.path.join(out, "scripted.pt"))
        torch.export.save(torch.export.export(net, (x,)), os.path.join(out, "exported.pt2"))


if __name__ == "__main__":
    main()
