# tests/fixtures/vision_models.py's ResNet-18 (torchvision's structure and
# names, random weights) exported by torch.onnx.export at 1x3x64x64: module
# groups conv1 … layer4, fc, for the cost overlay's biggest groups.
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import vision_models  # noqa: E402

torch.manual_seed(0)
model = vision_models.resnet18().eval()
x = torch.rand(1, 3, 64, 64)
with torch.no_grad():
    torch.onnx.export(model, (x,), sys.argv[1], opset_version=17, input_names=["x"], output_names=["logits"],
                      dynamo=False)
