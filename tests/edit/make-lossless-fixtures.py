#!/usr/bin/env python3
"""Writes ONNX models that use every field a lossless save must keep.

Usage: make-lossless-fixtures.py OUTDIR

Each model is built with onnx.helper and passes onnx.checker (except
where noted); together they set the fields Graft's IR has no place for
of its own: sparse initializers (2-D and linear indices, an explicit
zero), SPARSE_TENSOR(S) and TYPE_PROTO(S) attributes with shapes and
denotations, training_info, metadata_props and doc strings on every level,
local functions with attribute_proto / value_info / overload /
metadata_props, quantization annotations, device configurations, tensor
segments and metadata, typed-field tensors, fields unknown to onnx.proto
and external data.
Prints the file names written.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def props(prefix):
    return [onnx.StringStringEntryProto(key=f"{prefix}.key", value=f"{prefix} value")]


def add_meta(message, prefix):
    message.metadata_props.extend(props(prefix))


def shaped_type(elem, dims, denotation=None, dim_denotations=()):
    tp = helper.make_tensor_type_proto(elem, dims)
    if denotation:
        tp.denotation = denotation
    for d, text in zip(tp.tensor_type.shape.dim, dim_denotations):
        d.denotation = text
    return tp


def value_info(name, elem, dims, doc, **kw):
    vi = helper.make_value_info(name, shaped_type(elem, dims, **kw), doc_string=doc)
    add_meta(vi, f"value_info {name}")
    return vi


def sparse(name, values, indices, dims, doc=None):
    v = numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)
    if doc:
        v.doc_string = doc
    i = numpy_helper.from_array(np.asarray(indices, dtype=np.int64), "")
    return helper.make_sparse_tensor(v, i, dims)


def local_function():
    node = helper.make_node("Mul", ["a", "scale"], ["b"], doc_string="inside the function")
    add_meta(node, "function node")
    const = helper.make_node("Constant", [], ["scale"])
    const.attribute.append(helper.make_attribute("value_float", 1.0))
    const.attribute[0].ref_attr_name = "factor"
    const.attribute[0].type = onnx.AttributeProto.FLOAT
    const.attribute[0].ClearField("f")
    fn = helper.make_function("local.fn", "Scale", ["a"], ["b"], [const, node],
                              [helper.make_opsetid("", 21)], attributes=[],
                              attribute_protos=[helper.make_attribute("factor", 2.0, doc_string="default factor")],
                              doc_string="a scaling function")
    fn.value_info.append(value_info("scale", TensorProto.FLOAT, [], "the factor as a tensor"))
    fn.overload = "v1"
    add_meta(fn, "function")
    return fn


def training_info():
    init = helper.make_graph(
        [helper.make_node("RandomNormal", [], ["w_init"], shape=[3], doc_string="fresh weights")],
        "initialization", [], [helper.make_tensor_value_info("w_init", TensorProto.FLOAT, [3])])
    lr = numpy_helper.from_array(np.full([40], 0.5, dtype=np.float32), "lr")
    algo = helper.make_graph(
        [helper.make_node("Mul", ["W", "lr3"], ["w_next"]),
         helper.make_node("Slice", ["lr", "zero", "three"], ["lr3"])],
        "algorithm", [], [helper.make_tensor_value_info("w_next", TensorProto.FLOAT, [3])],
        initializer=[lr, numpy_helper.from_array(np.array([0], np.int64), "zero"),
                     numpy_helper.from_array(np.array([3], np.int64), "three")])
    info = onnx.TrainingInfoProto()
    info.initialization.CopyFrom(init)
    info.algorithm.CopyFrom(algo)
    info.initialization_binding.add(key="W", value="w_init")
    info.update_binding.add(key="W", value="w_next")
    return info


def everything():
    W = numpy_helper.from_array(np.arange(3, dtype=np.float32), "W")
    W.doc_string = "a weight"
    add_meta(W, "initializer W")
    steps = helper.make_tensor("steps", TensorProto.INT64, [2], [4, 5])   # int64_data, not raw_data
    S = sparse("S", [1.5, 0.0, -2.0], [[0, 0], [1, 1], [1, 2]], [2, 3], doc="sparse weight")
    S_linear = sparse("S_linear", [7.0], [4], [2, 3])

    nodes = [
        helper.make_node("Add", ["x", "W"], ["y"], name="add", doc_string="adds W"),
        helper.make_node("Constant", [], ["c"], name="const", sparse_value=sparse("", [3.0], [[1]], [4])),
        helper.make_node("Optional", [], ["maybe"], name="optional",
                         type=shaped_type(TensorProto.FLOAT, [2, "K"], denotation="TENSOR",
                                          dim_denotations=("DATA_BATCH", "DATA_CHANNEL"))),
        helper.make_node("Scale", ["y"], ["z"], name="call", domain="local.fn", factor=3.0),
        helper.make_node("Identity", ["steps"], ["steps_out"], name="id"),
    ]
    nodes[0].attribute.extend([])
    add_meta(nodes[0], "node add")
    nodes[3].overload = "v1"
    # An attribute's own doc string.
    nodes[2].attribute[0].doc_string = "the type of the optional"
    graph = helper.make_graph(
        nodes, "everything",
        [value_info("x", TensorProto.FLOAT, ["N", 3], "the input", denotation="TENSOR",
                    dim_denotations=("DATA_BATCH",))],
        [value_info("z", TensorProto.FLOAT, ["N", 3], "the output"),
         value_info("c", TensorProto.FLOAT, [4], "sparse constant"),
         helper.make_value_info("maybe", helper.make_optional_type_proto(shaped_type(TensorProto.FLOAT, [2, "K"]))),
         value_info("steps_out", TensorProto.INT64, [2], "")],
        initializer=[W, steps], value_info=[value_info("y", TensorProto.FLOAT, ["N", 3], "after add")],
        doc_string="the main graph", sparse_initializer=[S, S_linear])
    add_meta(graph, "graph")
    qa = graph.quantization_annotation.add(tensor_name="y")
    qa.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value="W")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local.fn", 1)],
                              functions=[local_function()], producer_name="lossless-fixture",
                              producer_version="1.0", domain="org.graft.test", model_version=7,
                              doc_string="a model with every field")
    model.ir_version = 10
    add_meta(model, "model")
    model.training_info.append(training_info())
    return model


def attribute_kinds():
    """A custom-domain node: TYPE_PROTOS with shapes, SPARSE_TENSORS, a
    tensor with segment and metadata, device configurations; value_info
    entries naming no value. Not for
    onnx.checker (custom.op has no schema; segment is legacy)."""
    t = helper.make_tensor("seg", TensorProto.FLOAT, [2], [1.0, 2.0])
    t.segment.begin = 0
    t.segment.end = 2
    add_meta(t, "tensor seg")
    node = helper.make_node(
        "Custom", ["x"], ["y"], domain="custom.op", name="custom",
        types=[shaped_type(TensorProto.FLOAT, [1, "M"]),
               helper.make_sequence_type_proto(shaped_type(TensorProto.INT64, [5])),
               helper.make_map_type_proto(TensorProto.STRING, shaped_type(TensorProto.DOUBLE, [2, 2]))],
        sparse_list=[sparse("", [1.0, 2.0], [0, 3], [4]), sparse("", [5.0], [[0, 1]], [2, 2])],
        tensor=t)
    cfg = node.device_configurations.add(configuration_id="two-gpus", pipeline_stage=0)
    cfg.sharding_spec.add(tensor_name="x")
    node.output[0] = "y0"
    # value_info entries the reader cannot attach (naming no value of the
    # graph), before and after ones it can, one of them for the graph
    # output: order and content must survive.
    graph = helper.make_graph([node, helper.make_node("Identity", ["y0"], ["y"])], "attribute_kinds",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              value_info=[value_info("ghost", TensorProto.INT8, [1], "names no value"),
                                          helper.make_tensor_value_info("y0", TensorProto.FLOAT, None),
                                          helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                          helper.make_tensor_value_info("stale", TensorProto.BOOL, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("custom.op", 1)])
    model.ir_version = 11
    model.configuration.add(name="two-gpus", num_devices=2)
    return model


def with_unknown(message, number, payload):
    """message with a length-delimited field number that onnx.proto does
    not define, as a newer producer would write it."""
    tag = (number << 3) | 2
    varint = bytearray()
    for value in (tag, len(payload)):
        while True:
            byte = value & 0x7F
            value >>= 7
            varint.append(byte | (0x80 if value else 0))
            if not value:
                break
    extended = type(message)()
    extended.ParseFromString(message.SerializeToString() + bytes(varint) + payload)
    return extended


def unknown_fields():
    """Fields of a newer onnx.proto, on the model, a node and a tensor."""
    node = with_unknown(helper.make_node("Add", ["x", "w"], ["y"], name="add"), 90, b"node extension")
    w = with_unknown(numpy_helper.from_array(np.ones([2], np.float32), "w"), 91, b"tensor extension")
    graph = helper.make_graph([node], "unknown_fields", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return with_unknown(model, 99, b"model extension")


def external(outdir):
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "big"], ["y"])], "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256])],
        initializer=[numpy_helper.from_array(np.linspace(0, 1, 256, dtype=np.float32), "big")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.save(model, os.path.join(outdir, "external.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="external.bin", size_threshold=0)


def external_sparse(outdir):
    """A sparse initializer whose values are external data (onnx.save does
    not externalise sparse tensors; other tools may): saved sparse and
    embedded."""
    values = numpy_helper.from_array(np.arange(1, 33, dtype=np.float32), "S")
    with open(os.path.join(outdir, "external-sparse.bin"), "wb") as f:
        f.write(values.raw_data)
    values.ClearField("raw_data")
    values.data_location = TensorProto.EXTERNAL
    values.external_data.add(key="location", value="external-sparse.bin")
    indices = numpy_helper.from_array(np.arange(0, 64, 2, dtype=np.int64), "")
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "external_sparse",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              sparse_initializer=[helper.make_sparse_tensor(values, indices, [64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.save(model, os.path.join(outdir, "external-sparse.onnx"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    model = everything()
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(outdir, "everything.onnx"))
    onnx.save(attribute_kinds(), os.path.join(outdir, "attribute-kinds.onnx"))
    onnx.save(unknown_fields(), os.path.join(outdir, "unknown-fields.onnx"))
    external(outdir)
    external_sparse(outdir)
    for name in ("everything.onnx", "attribute-kinds.onnx", "unknown-fields.onnx", "external.onnx",
                 "external-sparse.onnx"):
        print(os.path.join(outdir, name))


if __name__ == "__main__":
    main()
