"""Writes OUT/traced.pt, OUT/scripted.pt and OUT/exported.pt2 (torch.export):
convolutions followed by the activations torchvision writes
(SiLU/Hardswish/ReLU/ReLU6, in place or not), directly or through a BatchNorm2d
(with and without a convolution bias or an affine) and a residual add
[and relu] after, a convolution wider
than its maps (taps that only read padding), ResNet's max pool, and
batch norms that must not fold (after an add; after a convolution whose
output an add reads too) and a linear layer on the flattened maps, for
test-aten-activation.c; and an input OUT/x.npy with torch's outputs for
it, OUT/y.npy and OUT/logits.npy. Usage:
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
        self.c13 = nn.Conv2d(8, 8, 3, padding=1, bias=False)  # MobileNetV2's conv → batch_norm → hardtanh_ (ReLU6)
        self.b13 = nn.BatchNorm2d(8)
        self.a13 = nn.ReLU6(inplace=True)
        self.c7 = nn.Conv2d(8, 8, 13, padding=6)            # 13×13 over 6×6 maps
        self.c6 = nn.Conv2d(8, 8, 1)
        self.a6 = nn.SiLU()                                 # conv read twice: not fused
        self.c8 = nn.Conv2d(8, 8, 3, padding=1)             # conv with a bias → batch_norm → relu_
        self.b8 = nn.BatchNorm2d(8)
        self.a8 = nn.ReLU(inplace=True)
        self.c9 = nn.Conv2d(8, 8, 1, bias=False)            # conv → batch_norm without affine → add
        self.b9 = nn.BatchNorm2d(8, affine=False)
        self.c12 = nn.Conv2d(8, 8, 3, padding=1, bias=False)  # ResNet's conv → batch_norm → add_ → relu_
        self.b12 = nn.BatchNorm2d(8)
        self.a12 = nn.ReLU(inplace=True)
        self.c10 = nn.Conv2d(8, 8, 1, bias=False)           # conv read by the batch_norm and the add: not folded
        self.b10 = nn.BatchNorm2d(8)
        self.b11 = nn.BatchNorm2d(8)                        # after an add, no conv: not folded
        self.fc = nn.Linear(8 * 6 * 6, 10)                  # aten::linear through the packed GEMM

    def forward(self, x):
        x = self.pool(self.a1(self.c1(x)))
        x = self.a2(self.b2(self.c2(x)))
        x = self.a3(self.c3(x))
        x = self.a4(self.b4(self.c4(x)))
        x = self.a5(self.c5(x))
        x = self.a13(self.b13(self.c13(x)))
        t = self.c6(self.c7(x))
        x = self.a6(t) + t
        x = self.a8(self.b8(self.c8(x)))
        x = self.b9(self.c9(x)) + x
        y = self.b12(self.c12(x))
        y += x
        x = self.a12(y)
        u = self.c10(x)
        x = self.b11(self.b10(u) + u)
        return x, self.fc(torch.flatten(x, 1))


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    net = Net()
    for bn in (net.b2, net.b4, net.b8, net.b9, net.b10, net.b11, net.b12, net.b13):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2)
        if bn.affine:
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)
    net.eval()
    x = torch.randn(2, 4, 24, 24) * 3
    with torch.no_grad():
        np.save(os.path.join(out, "x.npy"), x.numpy())
        y, logits = net(x)
        np.save(os.path.join(out, "y.npy"), y.numpy())
        np.save(os.path.join(out, "logits.npy"), logits.numpy())
        torch.jit.save(torch.jit.trace(net, x), os.path.join(out, "traced.pt"))
        torch.jit.save(torch.jit.script(net), os.path.join(out, "scripted.pt"))
        torch.export.save(torch.export.export(net, (x,)), os.path.join(out, "exported.pt2"))


if __name__ == "__main__":
    main()
