"""Writes tests/torchscript/make-conv-model.py's model with torch.save(model):
a whole pickled module, no graph. Usage: make-pickled-module.py OUT.pt"""
import importlib.util
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("make_conv_model",
                                              os.path.join(here, "..", "torchscript", "make-conv-model.py"))
make_conv_model = importlib.util.module_from_spec(spec)
sys.modules["make_conv_model"] = make_conv_model  # pickle names the class by its module
spec.loader.exec_module(make_conv_model)

torch.manual_seed(0)
torch.save(make_conv_model.ConvNet().eval(), sys.argv[1])
