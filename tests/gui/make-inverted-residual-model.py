"""Writes an ONNX model of two MobileNetV2 inverted residual blocks (1×1
expansion → ReLU6 → 3×3 depthwise → ReLU6 → 1×1 projection [+ input]),
random weights, exported by PyTorch's TorchScript-based exporter as
torchvision's MobileNetV2 is: the runtime fuses each block into one
graft::PointwiseDepthwiseConv. Usage: make-inverted-residual-model.py OUT.onnx"""
import sys

import torch
from torch import nn


class InvertedResidual(nn.Module):
    def __init__(self, channels, expand, stride):
        super().__init__()
        wide = channels * expand
        self.residual = stride == 1
        self.conv = nn.Sequential(
            nn.Conv2d(channels, wide, 1), nn.ReLU6(),
            nn.Conv2d(wide, wide, 3, stride=stride, padding=1, groups=wide), nn.ReLU6(),
            nn.Conv2d(wide, channels, 1))

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(InvertedResidual(16, 6, 1), InvertedResidual(16, 6, 2)).eval()
    x = torch.rand(1, 16, 56, 56)
    torch.onnx.export(model, (x,), sys.argv[1], input_names=["x"], output_names=["y"], opset_version=17,
                      dynamo=False)


if __name__ == "__main__":
    main()
