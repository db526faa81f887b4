"""Writes tests/torchscript/make-conv-model.py's model, scripted in eval
mode, to one file for the GUI tests. Usage: make-scripted-conv-model.py OUT.pt"""
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
torch.jit.script(make_conv_model.ConvNet().eval()).save(sys.argv[1])
