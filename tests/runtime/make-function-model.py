#!/usr/bin/env python3
"""Writes OUTDIR/functions.onnx: a model calling ONNX local functions
(FunctionProto) with attribute references, a nested call, an omitted
attribute (the body's default applies) and the function's own opset
imports; plus its inputs x.npy and b.npy.
Usage: make-function-model.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

DOMAIN = "graft.test"


def attr_ref(name, ref, kind):
    attr = onnx.AttributeProto()
    attr.name = name
    attr.ref_attr_name = ref
    attr.type = kind
    return attr


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]

    leaky = helper.make_node("LeakyRelu", ["X"], ["T"])
    leaky.attribute.append(attr_ref("alpha", "alpha", onnx.AttributeProto.FLOAT))
    leaky_add = helper.make_function(DOMAIN, "LeakyAdd", ["X", "B"], ["Y"],
                                     [leaky, helper.make_node("Add", ["T", "B"], ["Y"])], opsets, ["alpha"])

    inner = helper.make_node("LeakyAdd", ["X", "X"], ["A"], domain=DOMAIN)
    inner.attribute.append(attr_ref("alpha", "slope", onnx.AttributeProto.FLOAT))
    softmax = helper.make_node("Softmax", ["A"], ["Y"])
    softmax.attribute.append(attr_ref("axis", "axis", onnx.AttributeProto.INT))
    twice = helper.make_function(DOMAIN, "DoubleSoftmax", ["X"], ["Y"], [inner, softmax], opsets, ["slope", "axis"])

    nodes = [
        helper.make_node("LeakyAdd", ["x", "b"], ["y1"], domain=DOMAIN, alpha=0.2),
        helper.make_node("LeakyAdd", ["x", "b"], ["y2"], domain=DOMAIN, alpha=0.01),
        helper.make_node("DoubleSoftmax", ["x"], ["y3"], domain=DOMAIN, slope=0.5),
        helper.make_node("DoubleSoftmax", ["y1"], ["y4"], domain=DOMAIN, slope=0.3, axis=0),
    ]
    graph = helper.make_graph(
        nodes, "functions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3, 5]) for n in ("y1", "y2", "y3", "y4")])
    model = helper.make_model(graph, opset_imports=opsets, functions=[leaky_add, twice])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "functions.onnx"))
    rng = np.random.default_rng(7)
    np.save(os.path.join(out, "x.npy"), (rng.random((3, 5), dtype=np.float32) * 4 - 2))
    np.save(os.path.join(out, "b.npy"), (rng.random(5, dtype=np.float32) - 0.5))


if __name__ == "__main__":
    main()
