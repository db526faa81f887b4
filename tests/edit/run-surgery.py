#!/usr/bin/env python3
"""Graph surgery through `graft-cli edit`, checked on real files.

Usage: run-surgery.py GRAFT_CLI

1. Every edit kind on small models built here with onnx.helper (a dense
   block, an If, a local function): the saved file passes onnx.checker
   (full check), runs in onnxruntime and in Graft's runtime, and the two
   agree; the expected effect is checked on the saved graph.
2. Fold + cleanup of PyTorch exports generated at test time (resnet18, a
   24-layer transformer encoder, and the dynamo exports of both): outputs
   match onnxruntime on the original within 1e-5 × max |output|; node
   counts are at most onnx-simplifier's on the same file (when onnxsim is
   installed in the test venv, else that comparison is skipped, saying so).
3. float16 resnet18 (with and without --keep-io-types) runs in
   onnxruntime within 1e-2 × max of the float32 model.
4. A recipe recorded on resnet18 replays on re-exports whose node and
   value names were changed by a script (scopes kept but last names
   changed; every name opaque) and gives the same model; a step whose
   target is gone fails naming it.
Prints TAP.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from tap import count, plan, run, skip, tap

SOURCE = os.environ["GRAFT_SOURCE_DIR"]
BUILD = os.environ["GRAFT_BUILD_DIR"]
MODELS = os.path.join(SOURCE, "tests", "fixtures-generated", "models")
OUT = os.path.join(BUILD, "tests", "edit", "surgery-out")

def out_path(name):
    return os.path.join(OUT, name)


def feeds_for(session, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 2 for d in i.shape]
        if "int" in i.type:
            feeds[i.name] = rng.integers(0, 3, shape).astype(np.int64)
        elif "bool" in i.type:
            feeds[i.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float16 if "float16" in i.type else np.float32)
    return feeds


def ort_run(path, feeds=None):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = feeds if feeds is not None else feeds_for(session)
    names = [o.name for o in session.get_outputs()]
    return feeds, dict(zip(names, session.run(None, feeds)))


def graft_run(cli, path, feeds, name):
    folder = out_path(name + "-graft")
    os.makedirs(folder, exist_ok=True)
    args = [cli, "run", path, "-o", folder]
    for key, value in feeds.items():
        file = os.path.join(folder, f"in-{len(args)}.npy")
        np.save(file, value)
        args += ["-i", f"{key}={file}"]
    result = run(args)
    if result.returncode != 0:
        return None, result.stderr + result.stdout
    outputs = {}
    for file in os.listdir(folder):
        if file.endswith(".npy") and not file.startswith("in-"):
            outputs[file[:-4]] = np.load(os.path.join(folder, file))
    return outputs, ""


def close(a, b, tolerance):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False, f"shape {a.shape} vs {b.shape}"
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    limit = tolerance * max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-30)
    return diff <= limit, f"max abs diff {diff:.3g}, limit {limit:.3g}"


def edit(cli, source, target, *edits):
    return run([cli, "edit", source, "-o", target, *edits])


def check_saved(cli, name, path, ort_runs=True, graft_runs=True, tolerance=1e-4):
    """onnx.checker full check, onnxruntime and Graft runs that agree
    (within tolerance × max; float16 models round differently)."""
    problems = []
    try:
        onnx.checker.check_model(onnx.load(path), full_check=True)
    except Exception as error:  # noqa: BLE001 - any checker complaint fails the test
        return False, f"onnx.checker: {error}"
    if not ort_runs:
        return True, ""
    try:
        feeds, expected = ort_run(path)
    except Exception as error:  # noqa: BLE001
        return False, f"onnxruntime: {error}"
    if graft_runs:
        got, err = graft_run(cli, path, feeds, name)
        if got is None:
            return False, f"graft-cli run: {err}"
        for key, value in expected.items():
            if key not in got:
                problems.append(f"Graft gave no output '{key}' (has {sorted(got)})")
                continue
            ok, text = close(got[key], value, tolerance)
            if not ok:
                problems.append(f"Graft vs onnxruntime on {key}: {text}")
    return not problems, "\n".join(problems)


# --- small models -----------------------------------------------------------

def dense_model():
    """x[2,4] → MatMul W → Add b → LeakyRelu → Mul s → Gather idx, plus a
    dead branch, a duplicate of s, an Identity, an unused input and two
    outputs."""
    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
        numpy_helper.from_array(np.array([0.5], np.float32), "s"),
        numpy_helper.from_array(np.array([0.5], np.float32), "s_copy"),
        numpy_helper.from_array(np.array([1, 0], np.int64), "idx"),
        numpy_helper.from_array(np.zeros(4, np.float32), "zeros"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h1"], name="mm"),
        helper.make_node("Add", ["h1", "b"], ["h2"], name="add"),
        helper.make_node("LeakyRelu", ["h2"], ["h3"], name="act", alpha=0.1),
        helper.make_node("Mul", ["h3", "s"], ["h4"], name="mul"),
        helper.make_node("Gather", ["h4", "idx"], ["y"], name="gather", axis=0),
        helper.make_node("Mul", ["h3", "s_copy"], ["h5"], name="mul2"),
        helper.make_node("Add", ["h5", "zeros"], ["h6"], name="add_zero"),
        helper.make_node("Identity", ["h6"], ["y2"], name="id"),
        helper.make_node("Neg", ["h1"], ["dead"], name="dead_neg"),
    ]
    graph = helper.make_graph(nodes, "dense",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
                               helper.make_tensor_value_info("unused_in", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4]),
                               helper.make_tensor_value_info("y2", TensorProto.FLOAT, [2, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def constant_model():
    """Constants computed at run time (Constant, Range, Shape of a static
    input), and nodes stored out of order."""
    nodes = [
        helper.make_node("Add", ["x", "scaled"], ["y"], name="out_add"),
        helper.make_node("Mul", ["c", "two"], ["scaled"], name="const_mul"),
        helper.make_node("Constant", [], ["two"], name="two_const", value_float=2.0),
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("ConstantOfShape", ["shape"], ["c"], name="cos",
                         value=numpy_helper.from_array(np.array([0.25], np.float32))),
    ]
    graph = helper.make_graph(nodes, "constants", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def if_model():
    """An If whose branches compute from the outer x."""
    then_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then_branch", [],
                                   [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
    else_graph = helper.make_graph([helper.make_node("LeakyRelu", ["x"], ["e"], name="else_act", alpha=0.1)],
                                   "else_branch", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], name="sum", keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"], name="gt"),
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_graph, else_branch=else_graph),
    ]
    graph = helper.make_graph(nodes, "if_model", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def function_model():
    """A local function (Relu then Mul by 2) called once."""
    function = helper.make_function("local", "double_relu", ["a"], ["b"], [
        helper.make_node("Relu", ["a"], ["r"], name="inner_relu"),
        helper.make_node("Constant", [], ["k"], name="inner_k", value_float=2.0),
        helper.make_node("Mul", ["r", "k"], ["b"], name="inner_mul"),
    ], [helper.make_opsetid("", 17)])
    graph = helper.make_graph([helper.make_node("double_relu", ["x"], ["y"], name="call", domain="local")], "fn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                             functions=[function], ir_version=8)


def graph_of(path):
    return onnx.load(path).graph


def node_named(graph, name):
    return next((n for n in graph.node if n.name == name), None)


def attribute(node, name):
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), None)


def edit_kinds(cli):
    dense = out_path("dense.onnx")
    onnx.save(dense_model(), dense)
    constants = out_path("constants.onnx")
    onnx.save(constant_model(), constants)
    branchy = out_path("if.onnx")
    onnx.save(if_model(), branchy)
    functions = out_path("function.onnx")
    onnx.save(function_model(), functions)
    weights = out_path("W-new.npy")
    np.save(weights, np.eye(4, dtype=np.float32) * 3)

    # name, model, edits, effect (graph → problem or None), ort and Graft can run it
    cases = [
        ("rename-node", dense, ["--rename-node", "act=activation"],
         lambda g: None if node_named(g, "activation") and not node_named(g, "act") else "node not renamed"),
        ("rename-value", dense, ["--rename-value", "h2=biased", "--rename-value", "W=weight", "--rename-value", "y=out"],
         lambda g: None if node_named(g, "act").input[0] == "biased" and node_named(g, "mm").input[1] == "weight"
         and g.output[0].name == "out" else "consumers or outputs do not follow"),
        ("set-attribute", dense, ["--attr", "act:alpha=0.3", "--attr", "gather:axis=1"],
         lambda g: None if abs(attribute(node_named(g, "act"), "alpha") - 0.3) < 1e-6
         and attribute(node_named(g, "gather"), "axis") == 1 else "attribute not set"),
        ("remove-attribute", dense, ["--remove-attr", "act:alpha"],
         lambda g: None if attribute(node_named(g, "act"), "alpha") is None else "attribute still there"),
        ("replace-initializer", dense, ["--initializer", f"W={weights}"],
         lambda g: None if np.array_equal(numpy_helper.to_array(next(i for i in g.initializer if i.name == "W")),
                                          np.eye(4, dtype=np.float32) * 3) else "data not replaced"),
        ("set-initializer-values", dense, ["--initializer-values", "b=[1, 2, 3, 4]"],
         lambda g: None if numpy_helper.to_array(next(i for i in g.initializer if i.name == "b")).tolist()
         == [1, 2, 3, 4] else "values not set"),
        ("cast-initializer", dense, ["--cast-initializer", "idx=int32"],
         lambda g: None if next(i for i in g.initializer if i.name == "idx").data_type == TensorProto.INT32
         else "dtype not changed"),
        ("add-output", dense, ["--add-output", "h3"],
         lambda g: None if [o.name for o in g.output] == ["y", "y2", "h3"]
         and g.output[2].type.tensor_type.elem_type == TensorProto.FLOAT else "h3 is not a typed output"),
        ("remove-output", dense, ["--remove-output", "y2"],
         lambda g: None if [o.name for o in g.output] == ["y"] and not node_named(g, "mul2")
         else "output or its branch still there"),
        ("add-input (cut)", dense, ["--add-input", "h2"],
         lambda g: None if "h2" in [i.name for i in g.input] and not node_named(g, "mm") else "graph not cut at h2"),
        ("add-input (new) and remove-input", dense, ["--add-input", "extra=float32:2xbatch", "--remove-input",
                                                     "unused_in"],
         lambda g: None if [i.name for i in g.input] == ["x", "extra"] else "inputs are wrong"),
        ("insert-node", dense, ["--insert", "h3=Sigmoid", "--insert", "h4=Mul(s)"],
         lambda g: None if [n.op_type for n in g.node].count("Sigmoid") == 1
         and [n.op_type for n in g.node].count("Mul") == 3 else "nodes not inserted"),
        ("insert-node on a graph output", dense, ["--insert", "y=Relu"],
         lambda g: None if g.output[0].name == "y" and node_named(g, "gather").output[0] != "y"
         else "the graph output lost its name"),
        ("insert-node with attributes, add-node", dense,
         ["--insert", "h2=LeakyRelu;alpha=0.3", "--add-node", "scaled=Mul(h3,s)", "--add-node", "as_int=Cast(h1);to=7"],
         lambda g: None if any(n.op_type == "LeakyRelu" and abs(attribute(n, "alpha") - 0.3) < 1e-6 for n in g.node)
         and [o.name for o in g.output] == ["y", "y2", "scaled", "as_int"]
         and g.output[3].type.tensor_type.elem_type == TensorProto.INT64 else "nodes, attributes or outputs wrong"),
        ("replace-op", dense, ["--replace-op", "act=Elu"],
         lambda g: None if node_named(g, "act").op_type == "Elu" and attribute(node_named(g, "act"), "alpha") is None
         else "op not replaced (or the LeakyRelu alpha kept)"),
        ("fold-constants", constants, ["--fold"],
         lambda g: None if [n.op_type for n in g.node] == ["Add"] else f"left {[n.op_type for n in g.node]}"),
        ("cleanup", dense, ["--cleanup"],
         lambda g: None if not node_named(g, "dead_neg") and not node_named(g, "id") and not node_named(g, "add_zero")
         and "s_copy" not in [i.name for i in g.initializer] else "dead node, Identity, x+0 or duplicate left"),
        ("toposort", constants, ["--toposort"],
         lambda g: None if [n.name for n in g.node][-1] == "out_add" else f"order {[n.name for n in g.node]}"),
        ("float16", dense, ["--float16"],
         lambda g: None if g.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16 else "input not float16"),
        ("float16 --keep-io-types --fp16-keep LeakyRelu", dense, ["--float16", "--keep-io-types", "--fp16-keep",
                                                                  "LeakyRelu"],
         lambda g: None if g.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
         and [n.op_type for n in g.node].count("Cast") >= 3 else "io types or block-list not kept"),
        ("edit inside an If branch", branchy, ["--graph", "branch#then_branch", "--replace-op", "then_relu=Sigmoid",
                                               "--graph", "branch#else_branch", "--attr", "else_act:alpha=0.5"],
         lambda g: None if attribute(node_named(g, "branch"), "then_branch").node[0].op_type == "Sigmoid"
         and abs(attribute(attribute(node_named(g, "branch"), "else_branch").node[0], "alpha") - 0.5) < 1e-6
         else "branches not edited"),
        ("edit inside a local function", functions, ["--function", "double_relu", "--replace-op", "inner_relu=Sigmoid"],
         lambda g: None),
        ("bypass, delete, extract", dense, ["--bypass", "mul", "--delete", "mul2", "--extract", "h1:h3"],
         lambda g: None if [o.name for o in g.output] == ["h3"] and [i.name for i in g.input] == ["h1"]
         else "not extracted"),
    ]
    for name, model, edits, effect in cases:
        target = out_path(name.split()[0] + f"-{count()}.onnx")
        result = edit(cli, model, target, *edits)
        if result.returncode != 0:
            tap(False, f"edit kind {name}: graft-cli edit {' '.join(edits)}", result.stderr + result.stdout)
            continue
        problem = effect(graph_of(target))
        if name.startswith("edit inside a local function"):
            body = onnx.load(target).functions[0]
            problem = None if body.node[0].op_type == "Sigmoid" else "function body not edited"
        ok, details = check_saved(cli, name.split()[0], target, tolerance=1e-2 if "float16" in name else 1e-4)
        tap(ok and problem is None, f"edit kind {name}: checker, onnxruntime and Graft",
            "\n".join(filter(None, [problem, details, result.stdout])))

    # A plugin op: checker passes; nothing here can run com.example ops.
    target = out_path("plugin.onnx")
    result = edit(cli, dense, target, "--replace-nodes", "add,act=com.example::BiasLeakyRelu", "--replace-op",
                  "mul=com.example::Scale")
    g = graph_of(target) if result.returncode == 0 else None
    ok, details = check_saved(cli, "plugin", target, ort_runs=False) if g else (False, result.stderr)
    plugin = node_named(g, "add") if g else None
    tap(ok and plugin is not None and plugin.domain == "com.example" and list(plugin.input) == ["h1", "b"]
        and list(plugin.output) == ["h3"] and node_named(g, "mul").domain == "com.example"
        and attribute(node_named(g, "mul"), "alpha") is None
        and any(o.domain == "com.example" for o in onnx.load(target).opset_import),
        "replace-nodes and replace-op to a custom domain: inputs, outputs, opset import; checker passes",
        details + result.stdout)

    # Refusals name the problem and save nothing.
    refusals = [
        (["--attr", "gather:axis=5"], "axis"),
        (["--attr", "act:alpha=ints:[1,2]"], "float"),
        (["--rename-value", "h2=h3"], "already used"),
        (["--remove-input", "x"], "still used"),
        (["--rename-node", "nothere=x"], "nothere"),
        (["--insert", "h3=NoSuchOp"], None),
        # Attributes are checked against the op's ONNX schema.
        (["--attr", "act:beta=0.5"], "has no attribute 'beta'"),
        (["--add-node", "Cast(h1)"], "needs the attribute 'to'"),
        (["--add-node", "Cast(h1);to=float:1"], "'to' is int, not float"),
        (["--add-node", "Relu(nothere)"], "no value 'nothere'"),
    ]
    for edits, needle in refusals:
        target = out_path(f"refused-{count()}.onnx")
        result = edit(cli, dense, target, *edits)
        if needle is None:
            # An op Graft does not know is allowed, and noted as unchecked.
            tap(result.returncode == 0 and "not checked" in result.stdout,
                f"edit {' '.join(edits)}: an unknown op is inserted and noted as unchecked", result.stdout + result.stderr)
            continue
        tap(result.returncode != 0 and needle in result.stderr and not os.path.exists(target),
            f"edit {' '.join(edits)} is refused, naming '{needle}'", result.stderr + result.stdout)


# --- fold + cleanup on real exports ---------------------------------------------

def onnxsim_count(path):
    try:
        import onnxsim
    except ImportError:
        return None
    simplified, ok = onnxsim.simplify(onnx.load(path))
    return len(simplified.graph.node) if ok else None


def fold_cleanup(cli):
    for name in ["resnet18", "transformer24", "resnet18_dynamo", "transformer24_dynamo"]:
        source = os.path.join(MODELS, name + ".onnx")
        target = out_path(name + "-simplified.onnx")
        result = edit(cli, source, target, "--fold", "--cleanup")
        if not tap(result.returncode == 0, f"{name}: graft-cli edit --fold --cleanup", result.stderr + result.stdout):
            continue
        graft_nodes = len(graph_of(target).node)
        original = len(graph_of(source).node)
        ok, details = check_saved(cli, name, target)
        feeds, before = ort_run(source)
        _, after = ort_run(target, feeds)
        for key, value in before.items():
            same, text = close(after[key], value, 1e-5)
            ok &= same
            details += f"\n{key}: {text}"
        tap(ok, f"{name}: {original} → {graft_nodes} nodes; checker passes; onnxruntime output within 1e-5 × max "
                f"of the original's; Graft agrees", details)
        peer = onnxsim_count(source)
        if peer is None:
            skip(f"{name}: onnxsim is not installed in the test venv")
        else:
            tap(graft_nodes <= peer, f"{name}: Graft {graft_nodes} nodes ≤ onnx-simplifier {peer}")


def float16(cli):
    source = os.path.join(MODELS, "resnet18.onnx")
    feeds, reference = ort_run(source)
    for label, edits in [("float16", ["--fold", "--cleanup", "--float16"]),
                         ("float16 --keep-io-types", ["--float16", "--keep-io-types"])]:
        target = out_path(f"resnet18-{label.replace(' ', '')}.onnx")
        result = edit(cli, source, target, *edits)
        if not tap(result.returncode == 0, f"resnet18 {label}", result.stderr + result.stdout):
            continue
        ok, details = True, ""
        try:
            onnx.checker.check_model(onnx.load(target), full_check=True)
            session = ort.InferenceSession(target, providers=["CPUExecutionProvider"])
            typed = {i.name: feeds[i.name].astype(np.float16 if "float16" in i.type else np.float32)
                     for i in session.get_inputs()}
            got = session.run(None, typed)
            for value, (key, expected) in zip(got, reference.items()):
                same, text = close(value.astype(np.float32), expected, 1e-2)
                ok &= same and (value.dtype == np.float32) == ("keep" in label)
                details += f"\n{key} ({value.dtype}): {text}"
        except Exception as error:  # noqa: BLE001
            ok, details = False, str(error)
        tap(ok, f"resnet18 {label}: checker passes, onnxruntime runs it within 1e-2 × max of float32", details)


# --- recipes across exports -----------------------------------------------------------

def renamed(source, target, keep_scopes):
    """The same network with other node and value names, as another export
    (or a renaming script) gives it: graph inputs and outputs keep theirs."""
    model = onnx.load(source)
    graph = model.graph
    keep = {v.name for v in graph.input} | {v.name for v in graph.output}
    names = {}
    for i, init in enumerate(graph.initializer):
        names[init.name] = f"param_{i}"
    for node in graph.node:
        for out in node.output:
            if out not in keep:
                names.setdefault(out, f"t{len(names)}")
    for index, node in enumerate(graph.node):
        scope = node.name.rsplit("/", 1)[0] if keep_scopes and "/" in node.name else ""
        node.name = f"{scope}/op_{index}" if keep_scopes else f"n{index}"
        node.input[:] = [names.get(n, n) for n in node.input]
        node.output[:] = [names.get(n, n) for n in node.output]
        del node.metadata_props[:]
    for init in graph.initializer:
        init.name = names[init.name]
    for info in graph.value_info:
        info.name = names.get(info.name, info.name)
    onnx.save(model, target)


def canonical(path):
    """The model with names replaced by positions: what must be equal."""
    graph = onnx.load(path).graph
    ids = {v.name: f"in:{v.name}" for v in graph.input}
    for init in graph.initializer:
        ids[init.name] = "init:" + numpy_helper.to_array(init).tobytes().hex()[:64] + str(list(init.dims))
    rows = []
    for index, node in enumerate(graph.node):
        for slot, out in enumerate(node.output):
            ids[out] = f"{index}:{slot}"
        attrs = sorted((a.name, str(helper.get_attribute_value(a))) for a in node.attribute)
        rows.append((node.domain, node.op_type, [ids.get(i, i) for i in node.input], attrs))
    # Names of outputs the edits added come from the export; positions must agree.
    outputs = [(ids.get(o.name), o.type.tensor_type.elem_type) for o in graph.output]
    return rows, outputs


def recipes(cli):
    source = os.path.join(MODELS, "resnet18.onnx")
    recipe = out_path("resnet18-recipe.json")
    recorded = out_path("resnet18-recorded.onnx")
    session = ["--fold", "--cleanup", "--rename-node", "/conv1/Conv=stem_conv",
               "--add-output", "/layer1/layer1.0/relu/Relu_output_0",
               "--attr", "/fc/Gemm:alpha=0.5", "--insert", "/layer4/layer4.1/relu_1/Relu_output_0=Sigmoid",
               "--replace-op", "/layer2/layer2.0/relu/Relu=Elu", "--bypass", "/layer3/layer3.1/relu_1/Relu",
               "--rename-value", "fc.weight=classifier.weight", "--float16", "--keep-io-types"]
    result = edit(cli, source, recorded, *session, "--save-recipe", recipe)
    if not tap(result.returncode == 0 and os.path.exists(recipe), "resnet18: an edit session saved as a recipe",
               result.stderr + result.stdout):
        return
    steps = json.load(open(recipe))["steps"]
    tap(len(steps) == 10 and steps[2]["node"]["group"] == "conv1" and steps[2]["node"]["op"] == "onnx::Conv",
        "the recipe has 10 steps whose nodes carry name, group, op and position", json.dumps(steps[2]))
    expected = canonical(recorded)
    for label, keep_scopes in [("scopes kept, names changed", True), ("every name opaque", False)]:
        variant = out_path(f"resnet18-renamed-{keep_scopes}.onnx")
        renamed(source, variant, keep_scopes)
        replayed = out_path(f"resnet18-replayed-{keep_scopes}.onnx")
        result = edit(cli, variant, replayed, "--recipe", recipe)
        if not tap(result.returncode == 0, f"recipe replays on a re-export ({label})", result.stderr + result.stdout):
            continue
        got = canonical(replayed)
        differences = [f"node {i}: {a} vs {b}" for i, (a, b) in enumerate(zip(got[0], expected[0])) if a != b]
        if len(got[0]) != len(expected[0]):
            differences.insert(0, f"{len(got[0])} nodes vs {len(expected[0])}")
        if got[1] != expected[1]:
            differences.insert(0, f"outputs {got[1]} vs {expected[1]}")
        ok, details = check_saved(cli, f"replayed-{keep_scopes}", replayed, tolerance=1e-2)
        feeds, a = ort_run(recorded)
        _, b = ort_run(replayed, feeds)
        same_outputs = len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a.values(), b.values()))
        same_outputs &= list(a)[0] == list(b)[0]   # the model's own output keeps its name
        tap(not differences and ok and same_outputs,
            f"the replayed model equals the recorded one ({label}): same nodes, edges, attributes, weights, outputs",
            "\n".join(differences[:10]) + details)
    # The other exporter: torch.onnx.export(dynamo=True) of the same network
    # names every node differently ("node_Conv_296"); its module groups are
    # the same, so a recipe of node edits finds the same nodes there.
    dynamo_recipe = out_path("resnet18-dynamo-recipe.json")
    session = ["--fold", "--cleanup", "--rename-node", "/layer1/layer1.0/conv1/Conv=block1_conv1",
               "--bypass", "/layer3/layer3.1/relu_1/Relu", "--add-output", "/layer2/layer2.0/relu/Relu_output_0",
               "--replace-op", "/layer2/layer2.1/relu/Relu=Elu", "--attr", "/fc/Gemm:alpha=0.5"]
    torchscript_result = out_path("resnet18-torchscript-edited.onnx")
    dynamo_result = out_path("resnet18-dynamo-replayed.onnx")
    first = edit(cli, source, torchscript_result, *session, "--save-recipe", dynamo_recipe)
    second = edit(cli, os.path.join(MODELS, "resnet18_dynamo.onnx"), dynamo_result, "--recipe", dynamo_recipe)
    if tap(first.returncode == 0 and second.returncode == 0, "a recipe recorded on the TorchScript-based export "
           "replays on the dynamo export", first.stderr + second.stderr + second.stdout):
        feeds, a = ort_run(torchscript_result)
        _, b = ort_run(dynamo_result, feeds)
        problems = []
        for (key_a, value_a), (key_b, value_b) in zip(a.items(), b.items()):
            same, text = close(value_b, value_a, 1e-5)
            if not same:
                problems.append(f"{key_a} vs {key_b}: {text}")
        g = graph_of(dynamo_result)
        ops = [n.op_type for n in g.node]
        if not node_named(g, "block1_conv1") or ops.count("Elu") != 1 or ops.count("Relu") != 15 or len(b) != 2:
            problems.append(f"renamed node, Elu, 15 Relu and 2 outputs expected; ops {ops}, outputs {list(b)}")
        tap(not problems, "the dynamo export edited by the recipe computes what the edited TorchScript-based export "
            "computes (both outputs within 1e-5 × max)", "\n".join(problems))

    # A step whose target is gone fails, naming it.
    broken = out_path("broken-recipe.json")
    data = json.load(open(recipe))
    data["steps"] = [{"edit": "bypass-node", "node": {"name": "/no/such/Relu", "op": "onnx::Relu", "group": "no.such",
                                                     "index": 0, "op_index": 40, "op_count": 99}}]
    json.dump(data, open(broken, "w"))
    target = out_path("broken.onnx")
    result = edit(cli, source, target, "--recipe", broken)
    tap(result.returncode == 1 and "step 1 (bypass-node)" in result.stderr and "/no/such/Relu" in result.stderr
        and not os.path.exists(target), "a recipe step that finds no target fails, naming the step and the node",
        result.stderr)


def main():
    cli = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    for stale in os.listdir(OUT):
        if stale.endswith(".onnx"):
            os.remove(os.path.join(OUT, stale))
    subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "fixtures", "make-onnx-models.py"), MODELS,
                    "resnet18", "transformer24", "resnet18_dynamo", "transformer24_dynamo"], check=True,
                   stdout=subprocess.DEVNULL)
    edit_kinds(cli)
    fold_cleanup(cli)
    float16(cli)
    recipes(cli)
    plan()


if __name__ == "__main__":
    main()
