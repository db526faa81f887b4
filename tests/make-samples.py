#!/usr/bin/env python3
"""Regenerates the sample models committed under data/samples/.

tiny-cnn.onnx: a small residual CNN (stem, two residual stages with a
strided downsample, global pooling, classifier) with random weights,
exported by torch.onnx.export with a dynamic batch axis. It is what
`make run` opens and what the quick tests read.

Usage: tests/make-samples.py [OUTDIR]   (default: data/samples next to tests/)
"""
import os
import sys

import torch
from torch import nn


class ResidualBlock(nn.Module):
    def __init__(self, channels_in, channels_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels_out)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels_out)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or channels_in != channels_out:
            self.downsample = nn.Sequential(
                nn.Conv2d(channels_in, channels_out, 1, stride, bias=False),
                nn.BatchNorm2d(channels_out))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + identity)


class TinyCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1 = nn.Sequential(ResidualBlock(16, 16, 1), ResidualBlock(16, 16, 1))
        self.layer2 = nn.Sequential(ResidualBlock(16, 32, 2), ResidualBlock(32, 32, 1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return torch.softmax(self.fc(torch.flatten(self.pool(x), 1)), dim=1)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data", "samples")
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    model = TinyCNN().eval()
    path = os.path.join(outdir, "tiny-cnn.onnx")
    torch.onnx.export(model, torch.randn(1, 3, 32, 32), path,
                      input_names=["image"], output_names=["probabilities"],
                      dynamic_axes={"image": {0: "batch"}, "probabilities": {0: "batch"}},
                      opset_version=17, do_constant_folding=True)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
