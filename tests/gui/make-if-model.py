"""Writes an ONNX model whose If node has two bodies, for the breadcrumbs
and subgraph tests of the window. Usage: make-if-model.py OUT.onnx"""
import sys

import onnx
from onnx import TensorProto, helper


def body(name, op, node_name):
    out = helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, [1, 4])
    node = helper.make_node(op, ["activated"], [name + "_out"], name=node_name)
    return helper.make_graph([node], name, [], [out])


def main():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [
        helper.make_node("Relu", ["x"], ["activated"], name="pre_relu"),
        helper.make_node("ReduceSum", ["activated"], ["total"], name="total_sum", keepdims=0),
        helper.make_node("Constant", [], ["zero"], name="zero_const",
                         value=helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])),
        helper.make_node("Greater", ["total", "zero"], ["positive"], name="is_positive"),
        helper.make_node("If", ["positive"], ["y"], name="branch_if",
                         then_branch=body("then_branch", "Identity", "then_identity"),
                         else_branch=body("else_branch", "Neg", "else_neg")),
    ]
    graph = helper.make_graph(nodes, "if_model", [x], [y])
    model = helper.make_model(graph, producer_name="graft-tests",
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
