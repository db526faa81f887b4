"""Writes OUT/traced.pt and OUT/scripted.pt: convolutions followed by the
activations torchvision writes (SiLU/Hardswish/ReLU, in place or not),
directly or through a BatchNorm2d, and a convolution wider than its maps
(taps that only read padding) and ResNet's max pool, for test-aten-activation.c; and an input
OUT/x.npy with torch's output for it, OUT/y.npy. Usage:
make-aten-activation.py OUT"""
import os
import sys

import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(4, 8, 3, padding=1)
        self.a1 = nn.SiLU(inplace=True)                     # conv → silu_
        self.pool = nn.MaxPool2d(3, 2, 1)                   # ResNet's stem pool
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.b2 = nn.BatchNorm2d(8)
        self.a2 = nn.Hardswish(inplace=True)                # conv → batch_norm → hardswish_
        self.c3 = nn.Conv2d(8, 12, 1)
        self.a3 = nn.Hardswish()                            # conv → hardswish
        self.c4 = nn.Conv2d(12, 12, 3, stride=2, padding=1, bias=False)
        self.b4 = nn.BatchNorm2d(12)
        self.a4 = nn.SiLU()                                 # conv → batch_norm → silu on 6×6 maps
        self.c5 = nn.Conv2d(12, 8, 3, padding=1)
        self.a5 = nn.ReLU(inplace=True)                     # conv → relu_
        self.c7 = nn.Conv2d(8, 8, 13, padding=6)            # 13×13 over 6×6 maps
        self.c6 = nn.Conv2d(8, 8, 1)
        self.a6 = nn.SiLU()                                 # conv read twice: not fused

    def forward(self, x):
        x = self.pool(self.a1(self.c1(x)))
        x = self.a2(self.b2(self.c2(x)))
        x = self.a3(self.c3(x))
        x = self.a4(self.b4(self.c4(x)))
        x = self.a5(self.c5(x))
        t = self.c6(self.c7(x))
        return self.a6(t) + t


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    net = Net()
    for bn in (net.b2, net.b4):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.5, 0.5)
    net.eval()
    x = torch.randn(2, 4, 24, 24) * 3
    with torch.no_grad():
        np.save(os.path.join(out, "x.npy"), x.numpy())
        np.save(os.path.join(out, "y.npy"), net(x).numpy())
        torch.jit.save(torch.jit.trace(net, x), os.path.join(out, "traced.pt"))
        torch.jit.save(torch.jit.script(net), os.path.join(out, "scripted.pt"))


if __name__ == "__main__":
    main()
