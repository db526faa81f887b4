#!/usr/bin/env python3
"""graft-cli convert's output format follows the output's name (issue 34,
point 5): a TorchScript file converted to y.pte is refused, naming the
format, and nothing is written; y.pt2 is a torch.export program that
torch.export.load runs as the module (without --shape it is refused,
naming the input, and nothing is written); y.onnx is written and is an
ONNX model onnx.checker accepts. --dtype sets an input's element type
(a traced UNet's int64 timestep), which onnxruntime then takes and
runs as PyTorch does; an unknown type or input is refused.

Usage: check-output-format.py GRAFT_CLI
"""
import os
import subprocess
import sys
import tempfile

import onnx
import torch

graft_cli = sys.argv[1]
failures = []


def check(condition, message):
    print(("ok: " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


with tempfile.TemporaryDirectory() as tmp:
    source = os.path.join(tmp, "x.pt")
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    torch.jit.save(torch.jit.trace(module, torch.randn(2, 4)), source)
    for name, says in (("y.pte", "ExecuTorch program"), ("y.pt2", "give input 'input' a --shape")):
        out = os.path.join(tmp, name)
        result = subprocess.run([graft_cli, "convert", source, "-o", out], capture_output=True, text=True)
        check(result.returncode == 2 and says in result.stderr,
              f"convert x.pt -o {name} exits {result.returncode}: {result.stderr.strip()}")
        check(not os.path.exists(out), f"{name} was not written")
    out = os.path.join(tmp, "y.pt2")
    result = subprocess.run([graft_cli, "convert", source, "-o", out, "--shape", "input=2x4"], capture_output=True,
                            text=True)
    check(result.returncode == 0, f"convert x.pt -o y.pt2 --shape input=2x4 exits 0 ({result.stderr.strip()})")
    if result.returncode == 0:
        x = torch.randn(2, 4)
        y = torch.export.load(out).module()(x)
        check(torch.allclose(y, module(x), atol=1e-6), "torch.export.load(y.pt2).module() = the module")
    out = os.path.join(tmp, "y.onnx")
    result = subprocess.run([graft_cli, "convert", source, "-o", out, "--shape", "input=2x4"], capture_output=True,
                            text=True)
    check(result.returncode == 0, f"convert x.pt -o y.onnx exits 0 ({result.stderr.strip()})")
    if result.returncode == 0:
        onnx.checker.check_model(onnx.load(out), full_check=True)
        check(True, "y.onnx passes onnx.checker")

class Timestep(torch.nn.Module):
    def forward(self, x, t):
        return x * (t.float()[:, None] + 1.0)


with tempfile.TemporaryDirectory() as tmp:
    import numpy as np
    import onnxruntime as ort
    source = os.path.join(tmp, "t.pt")
    x, t = torch.randn(2, 3), torch.tensor([3, 7])
    torch.jit.save(torch.jit.trace(Timestep(), (x, t)), source)
    out = os.path.join(tmp, "t.onnx")
    result = subprocess.run([graft_cli, "convert", source, "-o", out, "--shape", "x=2x3", "--shape", "t=2",
                             "--dtype", "t=int64"], capture_output=True, text=True)
    check(result.returncode == 0, f"convert t.pt --dtype t=int64 exits 0 ({result.stderr.strip()})")
    if result.returncode == 0:
        session = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
        types = {i.name: i.type for i in session.get_inputs()}
        check(types.get("t") == "tensor(int64)", f"t is declared int64 ({types})")
        y = session.run(None, {"x": x.numpy(), "t": t.numpy()})[0]
        check(np.allclose(y, Timestep()(x, t).numpy(), atol=1e-6), "onnxruntime with an int64 t = PyTorch")
    for bad, says in (("t=int65", "numeric type"), ("q=int64", "no input 'q'")):
        result = subprocess.run([graft_cli, "convert", source, "-o", out, "--overwrite", "--dtype", bad],
                                capture_output=True, text=True)
        check(result.returncode == 2 and says in result.stderr, f"--dtype {bad} refused: {result.stderr.strip()}")

if failures:
    sys.exit(1)
