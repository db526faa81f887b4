"""Writes tests/torchscript/make-conv-model.py's model, scripted in eval
mode, to one file for the GUI tests: its AttributeNet (forward reads
self.scale and self.start_dim) when OUT's name starts with "attribute",
else ConvNet. Usage: make-scripted-conv-model.py OUT.pt"""
import importlib.util
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("make_conv_model",
                                              os.path.join(here, "..", "torchscript", "make-conv-model.py"))
make_conv_model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_conv_model)

torch.manual_seed(0)
model_class = (make_conv_model.AttributeNet if os.path.basename(sys.argv[1]).startswith("attribute")
               else make_conv_model.ConvNet)
torch.jit.script(model_class().eval()).save(sys.argv[1])
