#!/usr/bin/env python3
"""Writes small hand-built ONNX files (with python3-onnx's helper API) that
the reader unit tests (tests/onnx/test-reader.c) check field by field.

Usage: make-reader-fixtures.py OUTDIR
Regenerated when this script changes (OUTDIR/.stamp holds its hash).
"""
import fcntl
import hashlib
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, outdir, name, check=True):
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(outdir, name))


def make_dims(outdir):
    """Inputs with fixed, symbolic and unknown dims, unknown rank, a scalar,
    non-tensor types in value_info, metadata and doc strings."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "batch", None])
    x.doc_string = "the image"
    norank = helper.make_tensor_value_info("norank", TensorProto.INT64, None)
    scalar = helper.make_tensor_value_info("scalar", TensorProto.DOUBLE, [])
    seq = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, [3, "n"])
    map_type = onnx.TypeProto()
    map_type.map_type.key_type = TensorProto.STRING
    map_type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    mapped = helper.make_value_info("mapped", map_type)
    opt = helper.make_value_info("opt", helper.make_optional_type_proto(
        helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.INT32, [4]))))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "batch", None])
    y_len = helper.make_tensor_value_info("len", TensorProto.INT64, [])
    nodes = [
        helper.make_node("Identity", ["x"], ["y"], name="/block/Identity", doc_string="copies x"),
        helper.make_node("SequenceConstruct", ["x"], ["seq"], name="/block/inner/SeqConstruct"),
        helper.make_node("SequenceLength", ["seq"], ["len"], name="Len"),
    ]
    graph = helper.make_graph(nodes, "dims_graph", [x, norank, scalar], [y, y_len],
                              value_info=[seq], doc_string="graph doc")
    # Non-tensor graph inputs (the checker wants them used; the reader must read them anyway).
    graph.input.extend([mapped, opt])
    model = helper.make_model(graph, producer_name="graft-tests", producer_version="1.0",
                              doc_string="model doc", domain="org.graft.test", model_version=7,
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 2)],
                              ir_version=8)  # stated: make_model's default follows the onnx release
    helper.set_model_props(model, {"author": "graft", "license": "CC0"})
    save(model, outdir, "dims.onnx", check=False)


def make_attributes(outdir):
    """One custom node with every attribute type."""
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "t")
    t2 = numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "t2")
    sparse = helper.make_sparse_tensor(
        helper.make_tensor("sv", TensorProto.FLOAT, [2], [5.0, 7.0]),
        helper.make_tensor("si", TensorProto.INT64, [2], [1, 5]), [2, 3])
    body = helper.make_graph([helper.make_node("Neg", ["a"], ["b"])], "g_body",
                             [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    body2 = helper.make_graph([helper.make_node("Abs", ["a"], ["b"]), helper.make_node("Neg", ["b"], ["c"])],
                              "g_body2",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])])
    node = helper.make_node("Everything", ["in"], ["out"], name="every", domain="com.example",
                            f=1.5, i=-3, s="hello", t=t, g=body,
                            floats=[0.5, 2.0], ints=[1, 2, 3], strings=["a", "bc"],
                            tensors=[t, t2], graphs=[body, body2], sparse=sparse,
                            tp=helper.make_tensor_type_proto(TensorProto.INT64, [2]),
                            tps=[helper.make_tensor_type_proto(TensorProto.FLOAT, None),
                                 helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.BOOL, None))])
    node.attribute[0].doc_string = "a float"
    graph = helper.make_graph([node], "attributes",
                              [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    save(model, outdir, "attributes.onnx", check=False)


def make_tensors(outdir):
    """Initializers in every typed field ONNX has, plus raw_data and a sparse initializer."""
    inits = [
        helper.make_tensor("f32", TensorProto.FLOAT, [2], [1.5, -2.0]),
        helper.make_tensor("f64", TensorProto.DOUBLE, [2], [0.25, 1e300]),
        helper.make_tensor("i8", TensorProto.INT8, [3], [-1, 2, -128]),
        helper.make_tensor("u8", TensorProto.UINT8, [2], [255, 1]),
        helper.make_tensor("i16", TensorProto.INT16, [2], [-2, 300]),
        helper.make_tensor("u16", TensorProto.UINT16, [1], [65535]),
        helper.make_tensor("i32", TensorProto.INT32, [2], [-5, 70000]),
        helper.make_tensor("i64", TensorProto.INT64, [2], [-1, 1 << 40]),
        helper.make_tensor("u32", TensorProto.UINT32, [1], [4000000000]),
        helper.make_tensor("u64", TensorProto.UINT64, [1], [1 << 63]),
        helper.make_tensor("b", TensorProto.BOOL, [3], [True, False, True]),
        helper.make_tensor("f16", TensorProto.FLOAT16, [2], np.array([1.0, -2.0], dtype=np.float16)),
        helper.make_tensor("bf16", TensorProto.BFLOAT16, [1], [1.0]),
        helper.make_tensor("c64", TensorProto.COMPLEX64, [1], [complex(1.0, -1.0)]),
        helper.make_tensor("str", TensorProto.STRING, [2], [b"ab", b"\x00z"]),
        numpy_helper.from_array(np.arange(100, dtype=np.float32).reshape(10, 10), "raw_big"),
        numpy_helper.from_array(np.array([3, 4], dtype=np.int32), "raw_small"),
        helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], []),
    ]
    sparse = helper.make_sparse_tensor(
        helper.make_tensor("sparse", TensorProto.FLOAT, [2], [1.0, 2.0]),
        helper.make_tensor("sparse_idx", TensorProto.INT64, [2, 2], [0, 1, 2, 0]), [3, 2])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["f32"], ["out"])], "tensors", [], [out],
                              initializer=inits, sparse_initializer=[sparse])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), outdir, "tensors.onnx")


def make_subgraphs(outdir):
    """If and Loop bodies reading outer-scope values (an initializer and a node output)."""
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    bias = numpy_helper.from_array(np.ones(3, dtype=np.float32), "bias")
    then_out = helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [3])
    else_out = helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [3])
    then_g = helper.make_graph([helper.make_node("Add", ["doubled", "bias"], ["then_out"], name="then_add")],
                               "then_branch", [], [then_out])
    # else: a Loop whose body reads the outer 'doubled' two levels up.
    iter_in = helper.make_tensor_value_info("iter", TensorProto.INT64, [])
    cond_in = helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])
    acc_in = helper.make_tensor_value_info("acc", TensorProto.FLOAT, [3])
    cond_out = helper.make_tensor_value_info("cond_out", TensorProto.BOOL, [])
    acc_out = helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [3])
    body = helper.make_graph([
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
        helper.make_node("Add", ["acc", "doubled"], ["acc_out"], name="body_add"),
    ], "loop_body", [iter_in, cond_in, acc_in], [cond_out, acc_out])
    trip = numpy_helper.from_array(np.array(2, dtype=np.int64), "trip")
    else_g = helper.make_graph([
        helper.make_node("Loop", ["trip", "", "x"], ["else_out"], name="loop", body=body),
    ], "else_branch", [], [else_out])
    nodes = [
        helper.make_node("Add", ["x", "x"], ["doubled"], name="double"),
        helper.make_node("If", ["cond"], ["y"], name="choose", then_branch=then_g, else_branch=else_g),
    ]
    graph = helper.make_graph(nodes, "subgraphs", [cond, x], [y], initializer=[bias, trip])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), outdir, "subgraphs.onnx")


def make_function(outdir):
    """A model-local function (FunctionProto) and a node calling it."""
    fn = helper.make_function(
        "org.graft", "ScaledRelu", ["X"], ["Y"],
        [helper.make_node("Constant", [], ["k"], value_float=2.0),
         helper.make_node("Mul", ["X", "k"], ["xk"]),
         helper.make_node("Relu", ["xk"], ["Y"])],
        [helper.make_opsetid("", 17)], attributes=["alpha"])
    fn.doc_string = "relu(2x)"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])
    graph = helper.make_graph([helper.make_node("ScaledRelu", ["x"], ["y"], domain="org.graft", name="call")],
                              "uses_function", [x], [y])
    model = helper.make_model(graph, functions=[fn],
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("org.graft", 1)])
    save(model, outdir, "function.onnx")


def external_model(location, offset=None, length=None, name="w"):
    w = helper.make_tensor(name, TensorProto.FLOAT, [4], [0.0] * 4)
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for key, value in entries:
        entry = w.external_data.add()
        entry.key = key
        entry.value = value
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Identity", [name], ["out"])], "external", [], [out],
                              initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def make_external(outdir):
    """external/: good (with offset/length), '../' escape, absolute path,
    symlink pointing outside, missing file, too-short file."""
    ext = os.path.join(outdir, "external")
    os.makedirs(os.path.join(ext, "sub"), exist_ok=True)
    with open(os.path.join(outdir, "outside.bin"), "wb") as f:
        f.write(np.arange(4, dtype=np.float32).tobytes())
    with open(os.path.join(ext, "sub", "weights.bin"), "wb") as f:
        f.write(b"\xff" * 8 + np.array([1, 2, 3, 4], dtype=np.float32).tobytes())
    link = os.path.join(ext, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join("..", "outside.bin"), link)
    onnx.save(external_model("sub/weights.bin", 8, 16), os.path.join(ext, "good.onnx"))
    onnx.save(external_model("../outside.bin"), os.path.join(ext, "escape.onnx"))
    onnx.save(external_model(os.path.join(outdir, "outside.bin")), os.path.join(ext, "absolute.onnx"))
    onnx.save(external_model("link.bin"), os.path.join(ext, "symlink.onnx"))
    onnx.save(external_model("nothere.bin"), os.path.join(ext, "missing.onnx"))
    onnx.save(external_model("sub/weights.bin", 16, 16), os.path.join(ext, "short.onnx"))


def make_external_saved(outdir):
    """external/real/: what onnx.save(save_as_external_data=True) writes, and
    the same model with its weights embedded, to compare."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("w1", (8, 4)), ("w2", (16,)), ("w3", (2, 3, 5)))]
    inits.append(numpy_helper.from_array(np.arange(7, dtype=np.int64), "idx"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w1"], ["y"])], "saved", [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    save(model, outdir, "external-embedded.onnx")
    real = os.path.join(outdir, "external", "real")
    os.makedirs(real, exist_ok=True)
    onnx.save_model(model, os.path.join(real, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.data", size_threshold=0)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = os.path.abspath(sys.argv[1])
    os.makedirs(outdir, exist_ok=True)
    with open(__file__, "rb") as f:
        version = hashlib.sha256(f.read()).hexdigest()
    stamp = os.path.join(outdir, ".stamp")
    with open(os.path.join(outdir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(stamp) and open(stamp).read().strip() == version:
            return
        for make in (make_dims, make_attributes, make_tensors, make_subgraphs, make_function, make_external,
                     make_external_saved):
            make(outdir)
        with open(stamp, "w") as f:
            f.write(version + "\n")


if __name__ == "__main__":
    main()
