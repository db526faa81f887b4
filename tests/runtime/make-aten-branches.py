"""Writes OUT/scripted.pt (torch.jit.script) of residual blocks as
torchvision's MobileNetV3 and EfficientNet script them: a convolution and
batch norm, then `result += input` under `if self.use_res_connect:`, a
module attribute, with EfficientNet's stochastic depth (its eval-mode
early return, another fixed prim::If) in between or not, and a block
whose attribute is False; then a residual under a condition on the
input's values, and an in-place add whose mutated input the next line
reads by its old name; for test-aten-branches.c. Also OUT/x.npy and
torch's output for it, OUT/y.npy. Usage: make-aten-branches.py OUT"""
import os
import sys

import numpy as np
import torch
from torch import nn
from torchvision.ops import StochasticDepth


class Residual(nn.Module):
    def __init__(self, use_res_connect, stochastic_depth):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.use_res_connect = use_res_connect
        self.stochastic_depth = StochasticDepth(0.2, "row") if stochastic_depth else nn.Identity()

    def forward(self, input):
        result = self.bn(self.conv(input))
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.r1 = Residual(True, True)      # EfficientNet's MBConv
        self.r2 = Residual(True, False)     # MobileNet's InvertedResidual
        self.r3 = Residual(False, False)    # a block without the residual
        self.c4 = nn.Conv2d(8, 8, 1, bias=False)
        self.b4 = nn.BatchNorm2d(8)
        self.c5 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.b5 = nn.BatchNorm2d(8)

    def forward(self, x):
        x = self.r3(self.r2(self.r1(x)))
        if bool(x.mean() > -100.0):         # the input decides: a branch run as a subgraph
            y = self.b4(self.c4(x))
            y += x
            x = y
        y = self.b5(self.c5(x))
        y.add_(x)                           # y mutated, then read as y
        return torch.relu(y) + y


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    net = Net()
    for bn in (m for m in net.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.5, 0.5)
    net.eval()
    x = torch.randn(2, 8, 12, 12)
    with torch.no_grad():
        np.save(os.path.join(out, "x.npy"), x.numpy())
        np.save(os.path.join(out, "y.npy"), net(x).numpy())
        torch.jit.save(torch.jit.script(net), os.path.join(out, "scripted.pt"))


if __name__ == "__main__":
    main()
