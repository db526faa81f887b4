# A small CNN exported to ONNX with a fixed batch of 2 and constant folding,
# so that the Reshape after the convolutions holds the traced 2: the
# static-input-dim and baked-shape-constant case of the GUI edit tests.
import sys

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = torch.nn.functional.max_pool2d(x, 2)
        return self.fc(x.view(x.size(0), -1))


torch.manual_seed(0)
model = Net().eval()
example = torch.randn(2, 3, 16, 16)
torch.onnx.export(model, example, sys.argv[1], input_names=["input"], output_names=["logits"],
                  opset_version=13, do_constant_folding=True, dynamo=False)
