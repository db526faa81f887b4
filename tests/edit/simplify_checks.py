"""What the simplifier's tests check on a result: op counts, and onnxruntime's outputs
against the original's."""
import collections
import os

import numpy as np
import onnx
import onnxruntime as ort

from tap import run


def ops(path):
    return collections.Counter(n.op_type for n in onnx.load(path, load_external_data=False).graph.node)


def node_count(path):
    return len(onnx.load(path, load_external_data=False).graph.node)


def ort_outputs(path, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def same_outputs(original, result, feeds):
    """'' when every output of result is within 1e-5 of the original's largest magnitude."""
    a, b = ort_outputs(original, feeds), ort_outputs(result, feeds)
    if len(a) != len(b):
        return f"{len(b)} outputs instead of {len(a)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"output {i}: {y.dtype}{list(y.shape)} instead of {x.dtype}{list(x.shape)}"
        scale = float(np.max(np.abs(x))) if x.size else 0.0
        worst = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0
        if worst > 1e-5 * max(scale, 1e-30):
            return f"output {i}: max |diff| {worst:.3g} > 1e-5 x {scale:.3g}"
    return ""


def edit(cli, src, dst, *args):
    if os.path.exists(dst):
        os.remove(dst)
    return run([cli, "edit", src, "-o", dst, *args], timeout=600)
