#!/usr/bin/env python3
"""A torch.cond or while_loop program that Graft wrote, lowered to ONNX by
Graft: the ONNX file passes onnx.checker's full check, holds the expected
control-flow node (If or Loop), and onnxruntime computes what the
TorchScript archive computes on inputs that take each branch or loop a
different number of times; Graft's own runtime runs the .pt2 to the same
values.

Usage: check-control-flow-onnx.py GRAFT_CLI OP_TYPE SCRIPTED.pt PROGRAM.pt2 OUT.onnx INPUT_FOLDER...
(each folder holds 0.npy, the input x)."""
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import onnxruntime
import torch

graft_cli, op_type, archive, program, out = sys.argv[1:6]
folders = sys.argv[6:]
warnings.filterwarnings("ignore")
subprocess.run([graft_cli, "convert", program, "-o", out], check=True)
model = onnx.load(out)
onnx.checker.check_model(model, full_check=True)
assert any(n.op_type == op_type for n in model.graph.node), [n.op_type for n in model.graph.node]
session = onnxruntime.InferenceSession(out)
scripted = torch.jit.load(archive)
worst = 0.0
for folder in folders:
    x = np.load(os.path.join(folder, "0.npy"))
    with torch.no_grad():
        ref = scripted(torch.from_numpy(x)).numpy()
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([graft_cli, "run", program, "--input", "x=" + os.path.join(folder, "0.npy"), "-o", scratch],
                       check=True, capture_output=True)
        names = [n for n in os.listdir(scratch) if n.endswith(".npy")]
        assert len(names) == 1, names
        graft = np.load(os.path.join(scratch, names[0]))
    scale = max(np.abs(ref).max(), 1e-30)
    error = max(np.abs(got - ref).max(), np.abs(graft - ref).max()) / scale
    worst = max(worst, error)
    print(f"{folder}: onnxruntime and Graft's runtime agree with TorchScript (max error {error:.2e} of max|ref|)")
sys.exit(0 if worst <= 1e-4 else 1)
