#!/usr/bin/python3
"""Exports the torchvision / nn.TransformerEncoder models the layout tests
and the layout benchmark render, with random weights.

Usage: make-models.py OUTDIR NAME...   (NAME: resnet18, mobilenet_v2,
transformer24, transformer96). Existing files are kept (cache)."""
import os
import sys

import torch
import torchvision


def transformer(layers):
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024)
    model = torch.nn.TransformerEncoder(layer, layers)
    return model, torch.randn(16, 1, 256)


MODELS = {
    "resnet18": lambda: (torchvision.models.resnet18(), torch.randn(1, 3, 224, 224)),
    "mobilenet_v2": lambda: (torchvision.models.mobilenet_v2(), torch.randn(1, 3, 224, 224)),
    "transformer24": lambda: transformer(24),
    "transformer96": lambda: transformer(96),
}


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    for name in sys.argv[2:]:
        path = os.path.join(outdir, name + ".onnx")
        if os.path.exists(path):
            continue
        model, example = MODELS[name]()
        model.eval()
        tmp = path + ".tmp"
        torch.onnx.export(model, example, tmp, opset_version=13)
        os.replace(tmp, path)
        print(path)


if __name__ == "__main__":
    main()
