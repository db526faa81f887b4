"""Writes an ONNX chain of 60 nodes, every fifth a Sigmoid (12 in all), too
tall to read when fitted in a window: Find's zoom and highlight tests.
Usage: make-find-model.py OUT.onnx"""
import sys

import onnx
from onnx import TensorProto, helper

NODES = 60


def main():
    nodes = []
    current = "x"
    for i in range(NODES):
        op = "Sigmoid" if i % 5 == 0 else ("Relu" if i % 2 else "Neg")
        out = f"t{i}"
        nodes.append(helper.make_node(op, [current], [out], name=f"{op.lower()}_{i}"))
        current = out
    nodes.append(helper.make_node("Identity", [current], ["y"], name="output_identity"))
    graph = helper.make_graph(nodes, "find-chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
