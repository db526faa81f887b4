#!/usr/bin/env python3
"""Writes the reproducers of issue 41's edit-side classes into OUTDIR.

Each file is built by hand (onnx.helper for the models, plain text for
the recipes) so that it exercises one attack: recipes that nest deeper
than a recursive parser survives or address a subgraph in a form the
replay cannot follow, names that would print fake lines or reverse the
text after them, external data named ".", and a tiny model whose string
output is far larger than the model. tests/hostile/test-hostile-edits.c
runs graft-cli on them.

usage: make-hostile-edits.py OUTDIR
"""
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from fixture_cache import done, output_dir

OUT = output_dir(__file__)


def at(name):
    return os.path.join(OUT, name)


def write(name, text):
    with open(at(name), "w") as f:
        f.write(text)


def save(model, name):
    with open(at(name), "wb") as f:
        f.write(model.SerializeToString())


def vi(name, dtype=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


# ---------------------------------------------------------------- recipes

# A top-level "relu" and one of the same name inside an If's branches: a
# step meant for the branch must never rename the top-level node.
def branch(tag):
    return helper.make_graph([helper.make_node("Relu", ["x"], [f"{tag}_out"], name="relu")], tag, [],
                             [vi(f"{tag}_out", shape=[2])])


nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("If", ["c"], ["y"], name="choose", then_branch=branch("then"), else_branch=branch("else")),
         helper.make_node("Add", ["r", "y"], ["z"], name="add")]
graph = helper.make_graph(nodes, "branches", [vi("x", shape=[2]), vi("c", TensorProto.BOOL, [])], [vi("z", shape=[2])])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), "if-branches.onnx")


def recipe(name, step):
    write(name, json.dumps({"graft-recipe": 1, "steps": [dict({"edit": "rename-node", "node": "relu", "to": "renamed"},
                                                              **step)]}))


# What graft_recipe_to_json writes, for the replay that must succeed.
recipe("recipe-graph-path.json", {"graph_path": [{"node": "choose", "attribute": "then_branch"}]})
recipe("recipe-graph-path-string.json", {"graph_path": "choose#then_branch"})
recipe("recipe-graph-path-strings.json", {"graph_path": ["choose", "then_branch"]})
recipe("recipe-graph-path-100k.json", {"graph_path": [{"node": "choose", "attribute": "then_branch"}] * 100000})
recipe("recipe-graph-number.json", {"graph": 7})
# 20000 levels in 40 KB: the parser and the conversion of a step recurse
# once per level.
write("recipe-deep-nesting.json",
      '{"graft-recipe": 1, "steps": [{"edit": "rename-node", "node": "relu", "to": "x", "deep": '
      + "[" * 20000 + "]" * 20000 + "}]}")

# ---------------------------------------------------------------- output that lies

# A name that would print a fake line, and one that shows the text after
# it reversed (U+202E): info and lint print both escaped.
FAKE_LINE = "relu\nmodel.onnx: 0 errors, 0 warnings, 0 notes"
REVERSED = "gelu\u202etxt.exe"
nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Foo", ["r"], [REVERSED], name=FAKE_LINE, domain="custom")]
graph = helper.make_graph(nodes, "lies\u202e", [vi("x", shape=[2])], [vi(REVERSED, shape=[2])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)],
                          ir_version=8)
helper.set_model_props(model, {"note": "one\ntwo"})
save(model, "names-that-lie.onnx")

# External data whose location is "." (the model's own folder).
def external_model(location):
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    entry = weight.external_data.add()
    entry.key, entry.value = "location", location
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "external", [vi("x", shape=[4])],
                              [vi("y", shape=[4])], initializer=[weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


save(external_model("."), "external-dot.onnx")
# A model whose weights (1, 2, 3, 4) lie beside it in weights.bin: the
# test swaps weights.bin for a symbolic link after the load.
os.makedirs(at("external"), exist_ok=True)
save(external_model("weights.bin"), "external/model.onnx")
with open(at("external/weights.bin"), "wb") as f:
    f.write(np.array([1, 2, 3, 4], np.float32).tobytes())

# ---------------------------------------------------------------- out of memory

# 5 M list elements in 10 MB: json-glib's tree of them needs far more
# than the 300 MiB address space the test gives graft-cli, so an
# allocation fails while the recipe is parsed.
write("recipe-five-million.json", '{"graft-recipe": 1, "steps": [' + ",".join(["0"] * 5_000_000) + "]}")

# ---------------------------------------------------------------- string payloads

# A one-element string expanded to 2^27 elements: 1 GiB of pointers, and
# a heap block for every element.
text = helper.make_tensor("text", TensorProto.STRING, [1], [b"a"])
count = helper.make_tensor("count", TensorProto.INT64, [1], [1 << 27])
graph = helper.make_graph([helper.make_node("Expand", ["text", "count"], ["many"], name="expand")], "strings",
                          [vi("x", shape=[1])], [vi("many", TensorProto.STRING, [1 << 27])], initializer=[text, count])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), "strings-expanded.onnx")

done(OUT, __file__)
