#!/usr/bin/env python3
"""Writes recipe-model.h: the ONNX model fuzz-recipe replays recipes on,
as a C array (a fuzzer has no source folder to read it from).

A Conv with weights, a Relu, an If whose branches hold nodes of the same
names as the top graph (what a wrong graph_path would edit instead), an
Add and a Reshape by an initializer: something for every kind of edit.

usage: tests/python tests/fuzz/make-recipe-model.py > tests/fuzz/recipe-model.h
"""
import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper


def vi(name, dtype=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


def branch(tag):
    return helper.make_graph([helper.make_node("Relu", ["h"], [f"{tag}_out"], name="relu")], tag, [],
                             [vi(f"{tag}_out", shape=[1, 2, 4, 4])])


weight = numpy_helper.from_array(np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3) / 50, "conv.weight")
bias = numpy_helper.from_array(np.array([0.1, -0.2], np.float32), "conv.bias")
flat = numpy_helper.from_array(np.array([1, 32], np.int64), "flat_shape")
nodes = [helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="/conv/Conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["h"], name="relu"),
         helper.make_node("If", ["flag"], ["y"], name="choose", then_branch=branch("then"), else_branch=branch("else")),
         helper.make_node("Add", ["h", "y"], ["z"], name="add"),
         helper.make_node("Reshape", ["z", "flat_shape"], ["out"], name="/flat/Reshape")]
graph = helper.make_graph(nodes, "fuzz", [vi("x", shape=[1, 3, 4, 4]), vi("flag", TensorProto.BOOL, [])],
                          [vi("out", shape=[1, 32])], initializer=[weight, bias, flat])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
checker.check_model(model)
data = model.SerializeToString()
print("/* Made by make-recipe-model.py (see there); do not edit. */")
print("static const unsigned char recipe_model_onnx[] = {")
for i in range(0, len(data), 16):
    print("  " + " ".join(f"0x{b:02x}," for b in data[i:i + 16]))
print("};")
