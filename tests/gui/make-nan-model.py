# A small CNN whose forward divides the first ReLU's output by zero (a
# planted fault: NaN where the ReLU gave 0, Inf elsewhere, NaN after), for
# the Run pane's NaN/Inf search.
import sys

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = x / torch.zeros(())
        x = torch.relu(self.conv2(x))
        x = torch.nn.functional.max_pool2d(x, 2)
        return self.fc(x.flatten(1))


torch.manual_seed(0)
model = Net().eval()
example = torch.randn(1, 3, 16, 16)
torch.onnx.export(model, example, sys.argv[1], input_names=["input"], output_names=["logits"], opset_version=13)
