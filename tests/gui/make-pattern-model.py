# An MLP exported by PyTorch (TorchScript exporter, opset 17) for the
# Replace Pattern dialog's test: nn.Linear on 3-D input gives MatMul → Add,
# so MatMul → Add → Relu occurs twice as a replaceable match, and once
# where the Add's output is read outside the pattern too (relu(a) + a),
# which the preview lists as skipped; nn.SiLU gives Sigmoid → Mul.
import sys

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 16)
        self.fc3 = torch.nn.Linear(16, 8)
        self.fc4 = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h))
        a = self.fc3(h)
        h = torch.relu(a) + a
        return torch.nn.functional.silu(self.fc4(h))


torch.manual_seed(0)
torch.onnx.export(Net().eval(), (torch.randn(2, 3, 8),), sys.argv[1], input_names=["x"], output_names=["y"],
                  opset_version=17, dynamo=False)
