# torch.nn.TransformerEncoder (2 layers, d_model 64) behind a scale of 400,
# exported at opset 14 where LayerNorm is decomposed (ReduceMean, Sub, Pow,
# ...): on the Run pane's random inputs in [-1, 1) the squares of the
# first LayerNorm pass float16's 65504 and overflow (a planted fault for
# Convert to Float16 Keeping Accuracy).
import sys

import torch


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, src):
        return self.encoder(src * 400.0)


torch.manual_seed(0)
model = Scaled().eval()
x = torch.rand(8, 1, 64) * 2 - 1
with torch.no_grad():
    torch.onnx.export(model, (x,), sys.argv[1], opset_version=14, input_names=["src"], output_names=["out"],
                      dynamo=False)
