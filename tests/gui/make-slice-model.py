# x[:, 1:] and x[..., ::2] exported by torch.onnx.export (TorchScript-based):
# the open slice ends are INT64_MAX constants, which the window must print
# as the integer 9223372036854775807, never 9.22337e+18.
import sys

import torch


class Slices(torch.nn.Module):
    def forward(self, x):
        return x[:, 1:] + 1, x[..., ::2]


torch.onnx.export(Slices(), torch.randn(2, 5, 6), sys.argv[1], input_names=["x"], output_names=["tail", "even"],
                  opset_version=13, dynamo=False)
