"""The synthetic scale probe of issue 37, made with onnx.helper:

    make-stage-probe.py STAGES OUT.onnx

STAGES stages × 100 blocks of MatMul → Add → Relu → Tanh on a [batch, 16]
value, nodes named /stageS/blockB/Op, one 16×16 weight and bias per stage:
100 stages give 40,000 nodes, 250 give 100,000, 2,500 a million. The file is
checked with onnx.checker before it is written.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BLOCKS = 100
WIDTH = 16


def make_probe(stages):
    rng = np.random.default_rng(0)
    nodes, initializers = [], []
    current = "x"
    for s in range(stages):
        weight, bias = f"/stage{s}/weight", f"/stage{s}/bias"
        initializers.append(numpy_helper.from_array(
            (rng.standard_normal((WIDTH, WIDTH)) / WIDTH).astype(np.float32), weight))
        initializers.append(numpy_helper.from_array(np.zeros(WIDTH, np.float32), bias))
        for b in range(BLOCKS):
            prefix = f"/stage{s}/block{b}"
            for op, inputs in (("MatMul", [current, weight]), ("Add", [None, bias]), ("Relu", [None]),
                               ("Tanh", [None])):
                if inputs[0] is None:
                    inputs[0] = current
                current = f"{prefix}/{op}_output_0"
                nodes.append(helper.make_node(op, inputs, [current], name=f"{prefix}/{op}"))
    graph = helper.make_graph(
        nodes, f"stage_probe_{stages}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", WIDTH])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, ["batch", WIDTH])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    onnx.save(make_probe(int(sys.argv[1])), sys.argv[2])


if __name__ == "__main__":
    main()
