"""Checks a model the GUI edited and saved: onnx.checker (full check,
with strict shape inference), then the same random inputs through
onnxruntime and through Graft's runtime (graft-cli run), whose outputs
must agree. Prints the output names; exits non-zero with the reason.

  tests/python tests/gui/check-edited-model.py MODEL GRAFT_CLI"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

DTYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32}


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "output"


def main():
    path, graft_cli = sys.argv[1], sys.argv[2]
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    with tempfile.TemporaryDirectory() as work:
        command = [graft_cli, "run", path, "-o", os.path.join(work, "out")]
        for value in model.graph.input:
            if value.name in initializers:
                continue
            tensor = value.type.tensor_type
            shape = [d.dim_value if d.dim_value > 0 else 1 for d in tensor.shape.dim]
            feeds[value.name] = rng.standard_normal(shape).astype(DTYPES[tensor.elem_type])
            file = os.path.join(work, safe_name(value.name) + ".npy")
            np.save(file, feeds[value.name])
            command += ["-i", f"{value.name}={file}"]
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        for output, want in zip(model.graph.output, expected):
            got = np.load(os.path.join(work, "out", safe_name(output.name) + ".npy"))
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-4):
                sys.exit(f"{output.name}: Graft and onnxruntime disagree (max diff "
                         f"{np.max(np.abs(got.astype(np.float64) - want)) if got.shape == want.shape else got.shape})")
    print(" ".join(o.name for o in model.graph.output))


if __name__ == "__main__":
    main()
