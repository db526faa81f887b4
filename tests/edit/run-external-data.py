#!/usr/bin/env python3
"""ONNX models whose weights lie in an external data file, edited and
saved by graft-cli: the weights stay external (PATH.data beside the saved
model, large ones page-aligned), the saved model passes onnx.checker's
path-based check and onnxruntime gives the original's outputs; saving over
the model's own files replaces the data file it reads safely; written to a
pipe, the weights are inline.

The model is torch.onnx.export's (a small MLP and a Conv stem), moved to
external data with onnx's own external_data_helper, as users receive them
from exporters of models past 2 GiB.

Usage: run-external-data.py GRAFT_CLI
Prints TAP.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch

from tap import plan, run, tap

BUILD = os.environ["GRAFT_BUILD_DIR"]
OUT = os.path.join(BUILD, "tests", "edit", "external-data-out")


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(16)
        self.head = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 10))

    def forward(self, x):
        y = torch.relu(self.norm(self.stem(x)))
        return self.head(y.mean(dim=(2, 3)))


def export(folder):
    torch.manual_seed(0)
    model = Model().eval()
    with torch.no_grad():
        model.norm.running_mean.uniform_(-0.5, 0.5)
        model.norm.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 8, 8)
    inline = os.path.join(folder, "inline.onnx")
    torch.onnx.export(model, (x,), inline, input_names=["x"], output_names=["y"], dynamo=False,
                      dynamic_axes={"x": {0: "batch"}})
    proto = onnx.load(inline)
    path = os.path.join(folder, "model.onnx")
    onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=1024)
    os.unlink(inline)
    return path, x.numpy()


def external_entries(path):
    """{initializer name: (location, offset, length)} of the external ones, and the inline byte sizes."""
    proto = onnx.load(path, load_external_data=False)
    external, inline = {}, {}
    for tensor in proto.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            entry = {e.key: e.value for e in tensor.external_data}
            external[tensor.name] = (entry["location"], int(entry.get("offset", 0)), int(entry["length"]))
        else:
            inline[tensor.name] = len(tensor.raw_data)
    return external, inline


def ort_output(path, x):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def check_saved(name, path, x, reference, location):
    external, inline = external_entries(path)
    big_inline = {k: v for k, v in inline.items() if v >= 1024}
    tap(len(external) > 0 and not big_inline and all(e[0] == location for e in external.values()),
        f"{name}: every initializer of 1 KiB or more is in {location}",
        f"external {sorted(external)}\ninline {inline}")
    data = os.path.join(os.path.dirname(path), location)
    misaligned = [k for k, (_, offset, length) in external.items() if length >= 1 << 20 and offset % 4096]
    tap(os.path.exists(data) and max(o + n for _, o, n in external.values()) <= os.path.getsize(data)
        and not misaligned, f"{name}: {location} holds every range the model names",
        f"misaligned {misaligned}")
    try:
        onnx.checker.check_model(path, full_check=True)
        tap(True, f"{name}: onnx.checker (path, full check)")
    except Exception as error:  # noqa: BLE001 - the checker's message is the detail
        tap(False, f"{name}: onnx.checker (path, full check)", error)
    got = ort_output(path, x)
    error = float(np.max(np.abs(got - reference)))
    tap(error <= 1e-5 * max(1.0, float(np.max(np.abs(reference)))), f"{name}: onnxruntime equals the original",
        f"max abs {error}")


def main():
    cli = sys.argv[1]
    shutil.rmtree(OUT, ignore_errors=True)
    source = os.path.join(OUT, "source")
    os.makedirs(source)
    path, x = export(source)
    reference = ort_output(path, x)

    # An edit that keeps every weight (a rename), then the simplifier,
    # which makes new ones (BatchNorm folded into the Conv, MatMul+Add → Gemm).
    renamed = os.path.join(OUT, "renamed", "model.onnx")
    os.makedirs(os.path.dirname(renamed))
    result = run([cli, "edit", path, "-o", renamed, "--rename-value", "y=logits"])
    tap(result.returncode == 0, "edit --rename-value on a model with external data", result.stderr)
    if result.returncode == 0:
        check_saved("renamed", renamed, x, reference, "model.onnx.data")

    simplified = os.path.join(OUT, "simplified", "small.onnx")
    os.makedirs(os.path.dirname(simplified))
    result = run([cli, "edit", path, "-o", simplified, "--simplify"])
    tap(result.returncode == 0, "edit --simplify on a model with external data", result.stderr)
    if result.returncode == 0:
        check_saved("simplified", simplified, x, reference, "small.onnx.data")
        tap(not os.path.exists(os.path.join(os.path.dirname(simplified), "weights.bin")),
            "simplified: the source's data file name is not reused")

    # Saving over the model's own files: the data file it reads is
    # replaced while it still reads it (through its open descriptor).
    own = os.path.join(OUT, "own")
    shutil.copytree(os.path.dirname(simplified), own)
    own_model = os.path.join(own, "small.onnx")
    result = run([cli, "edit", own_model, "-o", own_model, "--overwrite", "--fold"])
    tap(result.returncode == 0, "edit --overwrite over the model's own file and data file", result.stderr)
    if result.returncode == 0:
        check_saved("overwritten", own_model, x, reference, "small.onnx.data")
        leftovers = sorted(set(os.listdir(own)) - {"small.onnx", "small.onnx.data"})
        tap(not leftovers, "overwritten: no temporary files left behind", leftovers)

    # Through a pipe there is no folder for a data file: inline, as it fits.
    piped = os.path.join(OUT, "piped.onnx")
    done = subprocess.run([cli, "edit", path, "-o", "/dev/stdout", "--fold"], capture_output=True)
    with open(piped, "wb") as sink:
        sink.write(done.stdout)
    tap(done.returncode == 0, "edit -o /dev/stdout on a model with external data", done.stderr.decode())
    if done.returncode == 0:
        external, inline = external_entries(piped)
        tap(not external and inline, "piped: every weight inline")
        got = ort_output(piped, x)
        tap(float(np.max(np.abs(got - reference))) <= 1e-5 * max(1.0, float(np.max(np.abs(reference)))),
            "piped: onnxruntime equals the original")
    plan()


main()
