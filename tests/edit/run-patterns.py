#!/usr/bin/env python3
"""replace-pattern through `graft-cli edit`, on a PyTorch export made here
(torch.onnx.export, TorchScript exporter: nn.Linear on 3-D input gives
MatMul → Add, nn.SiLU gives Sigmoid → Mul) and on an If built with
onnx.helper whose branches hold the pattern.

Usage: run-patterns.py GRAFT_CLI

- every MatMul → Add → Relu becomes one com.example custom op: the saved
  file passes onnx.checker (full check) and Graft reads it back;
- every SiLU becomes x / (1 + exp(-x)) (a replacement subgraph): checker,
  and onnxruntime and Graft on the saved file match onnxruntime on the
  original within 1e-5 × max;
- the same inside both branches of an If;
- a recipe saved from the edit replays to the same model;
- a pattern that matches nothing fails, naming the pattern, saving nothing.
Prints TAP.
"""
import importlib.util
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

from tap import plan, run, tap

# The Graft runner of the surgery test (graft-cli run on .npy files).
_spec = importlib.util.spec_from_file_location("surgery", os.path.join(os.path.dirname(__file__), "run-surgery.py"))
surgery = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(surgery)

BUILD = os.environ["GRAFT_BUILD_DIR"]
OUT = os.path.join(BUILD, "tests", "edit", "patterns-out")

LINEAR_RELU = "m=MatMul(x,w) a=Add(m,b) Relu(a)"
SILU = "s=Sigmoid(x) Mul(x,s)"
SILU_BY_EXP = "one=Constant();value_float=1.0 n=Neg(x) e=Exp(n) d=Add(e,one) Div(x,d)"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 16)
        self.fc3 = torch.nn.Linear(16, 8)
        self.fc4 = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.nn.functional.silu(self.fc2(h))
        h = torch.relu(self.fc3(h))
        return torch.nn.functional.silu(self.fc4(h)) + h


def export(path):
    torch.manual_seed(0)
    torch.onnx.export(Net().eval(), (torch.randn(2, 3, 8),), path, input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False)


def if_model(path):
    """y = If(sum(x) > 0, silu(x), silu(-x))."""
    def branch(name, source):
        nodes = [helper.make_node("Sigmoid", [source], [name + "_s"], name=name + "_sigmoid"),
                 helper.make_node("Mul", [source, name + "_s"], [name + "_y"], name=name + "_mul")]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("Neg", ["x"], ["neg"], name="neg"),
        helper.make_node("ReduceSum", ["x"], ["total"], name="sum", keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"], name="gt"),
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=branch("then", "x"),
                         else_branch=branch("else", "neg")),
    ]
    graph = helper.make_graph(nodes, "if_silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor(name="zero", data_type=TensorProto.FLOAT, dims=[], vals=[0.0])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def ops(graph):
    found = []
    for node in graph.node:
        found.append(node.op_type)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                found += ops(attribute.g)
    return found


def ort_outputs(path, feeds):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def compare(cli, original, edited, name, feeds):
    """Checker on edited; onnxruntime and Graft on it against onnxruntime on original."""
    try:
        onnx.checker.check_model(onnx.load(edited), full_check=True)
    except Exception as error:  # noqa: BLE001 - any checker complaint fails the test
        return False, f"onnx.checker: {error}"
    expected = ort_outputs(original, feeds)[0]
    limit = 1e-5 * float(np.max(np.abs(expected)))
    got = ort_outputs(edited, feeds)[0]
    graft, error = surgery.graft_run(cli, edited, feeds, "pattern-" + name)
    if graft is None:
        return False, f"graft-cli run: {error}"
    graft = graft["y"]
    diffs = [float(np.max(np.abs(got - expected))), float(np.max(np.abs(graft - expected)))]
    return max(diffs) <= limit, f"max abs diff onnxruntime {diffs[0]:.3g}, Graft {diffs[1]:.3g}, limit {limit:.3g}"


def main():
    cli = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    for stale in os.listdir(OUT):
        if stale.endswith((".onnx", ".json")):
            os.remove(os.path.join(OUT, stale))
    source = os.path.join(OUT, "mlp.onnx")
    export(source)
    before = ops(onnx.load(source).graph)
    feeds = {"x": np.random.default_rng(3).standard_normal((2, 3, 8)).astype(np.float32)}
    tap(before.count("MatMul") == 4 and before.count("Relu") == 2 and before.count("Sigmoid") == 2,
        "the export has MatMul → Add per Linear, two ReLU and two SiLU as Sigmoid → Mul", " ".join(before))

    # A custom op for every Linear + ReLU.
    fused = os.path.join(OUT, "mlp-fused.onnx")
    recipe = os.path.join(OUT, "fused-recipe.json")
    result = run([cli, "edit", source, "-o", fused, "--replace-pattern",
                  LINEAR_RELU + "=>com.example::FusedLinearRelu;activation=string:relu", "--save-recipe", recipe])
    ok = result.returncode == 0
    details = result.stdout + result.stderr
    if ok:
        model = onnx.load(fused)
        after = ops(model.graph)
        custom = [n for n in model.graph.node if n.domain == "com.example"]
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception as error:  # noqa: BLE001
            ok, details = False, f"onnx.checker: {error}"
        ok = ok and (len(custom) == 2 and after.count("Relu") == 0 and after.count("MatMul") == 2
                     and all(len(n.input) == 3 for n in custom)
                     and all(a.name == "activation" and a.s == b"relu" for n in custom for a in n.attribute)
                     and any(o.domain == "com.example" for o in model.opset_import))
        details += f"\nops after: {' '.join(after)}\ncustom inputs: {[list(n.input) for n in custom]}"
        info = run([cli, "info", fused])
        ok = ok and info.returncode == 0
        details += "\n" + info.stdout[-400:] + info.stderr
    tap(ok, "MatMul → Add → Relu (both) → one com.example::FusedLinearRelu each: checker passes, Graft reads it", details)

    # The recipe replays on the original to the same model.
    replayed = os.path.join(OUT, "mlp-replayed.onnx")
    result = run([cli, "edit", source, "-o", replayed, "--recipe", recipe])
    same = result.returncode == 0 and os.path.exists(fused) and \
        onnx.load(replayed).graph.SerializeToString() == onnx.load(fused).graph.SerializeToString()
    tap(same, "the saved recipe replays to the same graph", result.stdout + result.stderr)

    # A replacement subgraph for every SiLU.
    rewritten = os.path.join(OUT, "mlp-silu.onnx")
    result = run([cli, "edit", source, "-o", rewritten, "--replace-pattern", SILU + "=>" + SILU_BY_EXP])
    ok, details = result.returncode == 0, result.stdout + result.stderr
    if ok:
        after = ops(onnx.load(rewritten).graph)
        ok = after.count("Sigmoid") == 0 and after.count("Exp") == 2 and after.count("Div") == 2
        good, text = compare(cli, source, rewritten, "silu", feeds)
        ok, details = ok and good, details + "\n" + text + "\nops after: " + " ".join(after)
    tap(ok, "SiLU (both) → x / (1 + exp(-x)): checker; onnxruntime and Graft match the original", details)

    # Inside If branches.
    branchy = os.path.join(OUT, "if-silu.onnx")
    branchy_out = os.path.join(OUT, "if-silu-rewritten.onnx")
    if_model(branchy)
    result = run([cli, "edit", branchy, "-o", branchy_out, "--replace-pattern", SILU + "=>" + SILU_BY_EXP])
    ok, details = result.returncode == 0, result.stdout + result.stderr
    if ok:
        after = ops(onnx.load(branchy_out).graph)
        ok = after.count("Sigmoid") == 0 and after.count("Exp") == 2
        for sign in (1.0, -1.0):
            x = {"x": (sign * np.abs(np.random.default_rng(4).standard_normal((2, 3)))).astype(np.float32)}
            good, text = compare(cli, branchy, branchy_out, f"if{int(sign)}", x)
            ok, details = ok and good, details + f"\nbranch {'then' if sign > 0 else 'else'}: {text}"
    tap(ok, "the pattern is found and replaced inside both If branches; both branches match onnxruntime", details)

    # Nothing matches: a clear failure, nothing saved.
    missing = os.path.join(OUT, "nothing.onnx")
    result = run([cli, "edit", source, "-o", missing, "--replace-pattern", "c=Conv(x,w) Relu(c)=>com.example::ConvRelu"])
    tap(result.returncode != 0 and "matches nothing" in result.stderr and "Conv(x,w)" in result.stderr
        and not os.path.exists(missing), "a pattern that matches nothing fails naming it and saves nothing",
        result.stdout + result.stderr)
    plan()


if __name__ == "__main__":
    main()
