#!/usr/bin/env python3
"""`graft-cli edit --fold` inside If and Loop bodies, on models built here
with onnx.helper: what a body computes from constants alone (its Constant
nodes, the outer graph's initializers) is folded into the body; what
depends on the body's inputs or the outer graph's inputs stays. The saved
file passes onnx.checker (full check) and onnxruntime and Graft on it
match onnxruntime on the original within 1e-5 × max.

Usage: run-fold-bodies.py GRAFT_CLI
Prints TAP.
"""
import importlib.util
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from tap import plan, run, tap

_spec = importlib.util.spec_from_file_location("surgery", os.path.join(os.path.dirname(__file__), "run-surgery.py"))
surgery = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(surgery)

BUILD = os.environ["GRAFT_BUILD_DIR"]
OUT = os.path.join(BUILD, "tests", "edit", "fold-bodies-out")


def constant(name, value):
    return helper.make_node("Constant", [], [name], name=name + "_const",
                            value=numpy_helper.from_array(np.asarray(value, np.float32)))


def if_model():
    """y = If(sum(x) > 0, (x + 2*2) * sqrt(w) + w, x - (-3)) with w an outer initializer (its
    Sqrt folds, its Add stays: w must stay too)."""
    then_graph = helper.make_graph([
        constant("two", [2.0]),
        helper.make_node("Mul", ["two", "two"], ["four"], name="then_four"),
        helper.make_node("Sqrt", ["w"], ["root"], name="then_sqrt"),
        helper.make_node("Add", ["x", "four"], ["shifted"], name="then_add"),
        helper.make_node("Mul", ["shifted", "root"], ["scaled"], name="then_scale"),
        helper.make_node("Add", ["scaled", "w"], ["t"], name="then_add_w"),
    ], "then_branch", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
    else_graph = helper.make_graph([
        constant("three", [3.0]),
        helper.make_node("Neg", ["three"], ["minus_three"], name="else_neg"),
        helper.make_node("Sub", ["x", "minus_three"], ["e"], name="else_sub"),
    ], "else_branch", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], name="sum", keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"], name="gt"),
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_graph, else_branch=else_graph),
    ]
    rng = np.random.default_rng(5)
    graph = helper.make_graph(nodes, "if_fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
                               numpy_helper.from_array(np.abs(rng.standard_normal((2, 3))).astype(np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def loop_model():
    """acc = x; 3 times: acc = acc * (1.5 * 1.5) + exp(0.5)."""
    body = helper.make_graph([
        constant("k", [1.5]),
        constant("half", [0.5]),
        helper.make_node("Mul", ["k", "k"], ["k2"], name="body_square"),
        helper.make_node("Exp", ["half"], ["bias"], name="body_exp"),
        helper.make_node("Mul", ["acc_in", "k2"], ["scaled"], name="body_scale"),
        helper.make_node("Add", ["scaled", "bias"], ["acc_out"], name="body_add"),
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
    ], "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2, 3])])
    nodes = [helper.make_node("Loop", ["trips", "keep_going", "x"], ["y"], name="loop", body=body)]
    graph = helper.make_graph(nodes, "loop_fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [numpy_helper.from_array(np.array(3, np.int64), "trips"),
                               numpy_helper.from_array(np.array(True), "keep_going")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def body_ops(path):
    ops = {}
    for node in onnx.load(path).graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                ops[attribute.name] = [n.op_type for n in attribute.g.node]
    return ops


def check(cli, name, model, expected_ops, feeds_list):
    source = os.path.join(OUT, name + ".onnx")
    folded = os.path.join(OUT, name + "-folded.onnx")
    onnx.save(model, source)
    result = run([cli, "edit", source, "-o", folded, "--fold"])
    details = result.stdout + result.stderr
    if result.returncode != 0:
        return tap(False, f"{name}: graft-cli edit --fold", details)
    ops = body_ops(folded)
    ok = ops == expected_ops
    details += f"\nbody ops after: {ops}\nexpected: {expected_ops}"
    try:
        onnx.checker.check_model(onnx.load(folded), full_check=True)
    except Exception as error:  # noqa: BLE001 - any checker complaint fails the test
        ok, details = False, details + f"\nonnx.checker: {error}"
    for i, feeds in enumerate(feeds_list):
        session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)[0]
        got = ort.InferenceSession(folded, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        graft, error = surgery.graft_run(cli, folded, feeds, f"fold-bodies-{name}-{i}")
        if graft is None:
            ok, details = False, details + f"\ngraft-cli run: {error}"
            continue
        limit = 1e-5 * float(np.max(np.abs(expected)))
        diffs = (float(np.max(np.abs(got - expected))), float(np.max(np.abs(graft["y"] - expected))))
        ok = ok and max(diffs) <= limit
        details += f"\ninputs {i}: max abs diff onnxruntime {diffs[0]:.3g}, Graft {diffs[1]:.3g}, limit {limit:.3g}"
    return tap(ok, f"{name}: constants folded inside the bodies, the rest kept; checker, onnxruntime and Graft agree",
               details)


def main():
    cli = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    x = np.abs(np.random.default_rng(6).standard_normal((2, 3))).astype(np.float32)
    check(cli, "if", if_model(), {"then_branch": ["Add", "Mul", "Add"], "else_branch": ["Sub"]},
          [{"x": x}, {"x": -x}])
    check(cli, "loop", loop_model(), {"body": ["Mul", "Add", "Identity"]}, [{"x": x}])
    plan()


if __name__ == "__main__":
    main()
