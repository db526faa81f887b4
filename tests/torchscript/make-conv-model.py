"""Writes a small convolutional model traced and scripted with the test
venv's torch: conv (stride 2, no bias), batch norm, max pool, linear, in
eval mode (and scripted once more in training mode, whose
`if self.training:` branches are live); and a scripted model that reads
plain module attributes (a float, an int) in forward, which TorchScript
keeps as prim::GetAttr nodes. Usage: make-conv-model.py OUT_DIR"""
import os
import sys

import torch
from torch import nn


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class AttributeNet(nn.Module):
    """forward reads self.scale and self.start_dim at run time."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.scale = 0.5
        self.start_dim = 1

    def forward(self, x):
        y = torch.relu(self.conv(x)) * self.scale
        return torch.flatten(y, self.start_dim)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = ConvNet().eval()
    torch.jit.trace(model, torch.randn(1, 3, 32, 32)).save(os.path.join(out, "conv_traced.pt"))
    torch.jit.script(model).save(os.path.join(out, "conv_scripted.pt"))
    torch.jit.script(model.train()).save(os.path.join(out, "conv_scripted_train.pt"))
    torch.jit.script(AttributeNet().eval()).save(os.path.join(out, "attribute_scripted.pt"))


if __name__ == "__main__":
    main()
