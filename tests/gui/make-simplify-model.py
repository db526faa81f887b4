# GPT-2 (transformers, from a config with random weights) exported by
# torch.export's exporter at opset 20, for the Simplify… dialog's test:
# its tanh GELUs fuse into Gelu (opset 20 has it), its attention does not
# (Attention needs opset 23), and folding and the other passes find work.
import sys

import torch
import transformers


class HiddenStates(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).last_hidden_state


torch.manual_seed(0)
config = transformers.GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=32, use_cache=False)
model = HiddenStates(transformers.GPT2Model(config).eval())
torch.onnx.export(model, (torch.randint(0, 100, (2, 16)),), sys.argv[1], dynamo=True, opset_version=20,
                  input_names=["input_ids"], output_names=["hidden"], external_data=False)
