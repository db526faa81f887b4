"""Writes an ONNX model of a long chain in name-scope groups: collapsed it
is a short picture, expanded it is far taller than a PNG can be at a
readable scale. Usage: make-long-chain.py OUT.onnx [GROUPS] [NODES_PER_GROUP]"""
import sys

import onnx
from onnx import TensorProto, helper


def main():
    out = sys.argv[1]
    groups = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    per_group = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])
    nodes = []
    current = "x"
    for g in range(groups):
        for i in range(per_group):
            name = f"layer{g}_{i}"
            op = "Relu" if i % 2 == 0 else "Sigmoid"
            nodes.append(helper.make_node(op, [current], [name], name=f"/layer{g}/{op}_{i}"))
            current = name
    nodes.append(helper.make_node("Identity", [current], ["y"], name="/head/Identity"))
    graph = helper.make_graph(nodes, "long_chain", [x], [y])
    model = helper.make_model(graph, producer_name="graft-tests", opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, out)


if __name__ == "__main__":
    main()
