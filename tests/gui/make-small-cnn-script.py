#!/usr/bin/env python3
"""A scripted small CNN (torch.jit.script + torch.jit.save) for the GUI's
Export as ONNX test: make-small-cnn-script.py OUT.pt"""
import sys

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(8, 4)).eval()
torch.jit.save(torch.jit.script(model), sys.argv[1])
