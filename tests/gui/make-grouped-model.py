"""Writes an ONNX model of four name-scope groups of 80 nodes each, too
many for the first view to open them, with nodes of a non-standard domain
(flagged as errors by the checks) inside block1 (3) and block2 (2): the
case of marks hidden in collapsed groups. Usage: make-grouped-model.py OUT.onnx"""
import sys

import onnx
from onnx import TensorProto, helper

BLOCKS = 4
NODES_PER_BLOCK = 80
FLAGGED = {1: 3, 2: 2}   # block → nodes of the vendor domain


def main():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    nodes = []
    current = "x"
    for block in range(BLOCKS):
        for i in range(NODES_PER_BLOCK):
            out = f"block{block}_{i}"
            if i < FLAGGED.get(block, 0):
                # Same shape in and out: the vendor op keeps the chain typed.
                nodes.append(helper.make_node("FancyNorm", [current], [out], name=f"/block{block}/FancyNorm_{i}",
                                              domain="com.example"))
            else:
                nodes.append(helper.make_node("Relu", [current], [out], name=f"/block{block}/Relu_{i}"))
            current = out
    nodes.append(helper.make_node("Identity", [current], ["y"], name="/head/Identity"))
    graph = helper.make_graph(nodes, "grouped", [x], [y])
    model = helper.make_model(graph, producer_name="graft-tests",
                              opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
