"""Writes a scripted model with control flow for the inline-body tests: a
data-dependent `if` whose branches read a value computed before it, a
`for` loop carrying a tensor, and a BatchNorm in eval mode (its
`if self.training:` branches never run). Usage: make-control-flow-model.py OUT.pt"""
import sys

import torch
from torch import nn


class ControlFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.scale = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        features = torch.relu(self.bn(self.conv(x)))
        gate = torch.sigmoid(features)
        if bool(features.sum() > 0):
            y = self.scale(features) * gate
        else:
            y = features - gate
        for _ in range(3):
            y = torch.tanh(y) + gate
        return y


def main():
    torch.manual_seed(0)
    torch.jit.script(ControlFlow().eval()).save(sys.argv[1])


if __name__ == "__main__":
    main()
