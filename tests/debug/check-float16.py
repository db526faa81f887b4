"""Runs a float32 model and its float16 conversion in onnxruntime:
    check-float16.py F32.onnx F16.onnx INPUT.npy RTOL ATOL
and prints "close" when every output of F16 is within RTOL/ATOL of F32's
(numpy's allclose, NaN never close), else "differ"; onnx.checker must pass
on F16."""
import sys

import numpy as np
import onnx
import onnxruntime as ort


def run(path, x):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x}
    return session.run(None, feed)


def main():
    f32, f16, input_path, rtol, atol = sys.argv[1:6]
    onnx.checker.check_model(onnx.load(f16), full_check=True)
    x = np.load(input_path)
    want, got = run(f32, x), run(f16, x)
    close = all(np.allclose(g.astype(np.float32), w, rtol=float(rtol), atol=float(atol)) for w, g in zip(want, got))
    print("close" if close else "differ")


main()
