#!/usr/bin/env python3
"""Compares ONNX models saved by Graft with the originals, field by field.

Usage: compare-onnx.py LISTFILE
  LISTFILE has one "ORIGINAL<TAB>SAVED" pair per line.

Prints TAP: one line per pair ("ok N - name" or "not ok N - name" followed by
the differences as '#' comments). Equivalence is modulo what the ONNX format
leaves free or Graft documents as normalised (model/onnx/writer.h): order of
value_info and opset imports, "" vs "ai.onnx" domains, typed fields vs
raw_data, sparse tensors vs their dense values, value_info of initializers,
dimension/type denotations, shapes inside TYPE_PROTO attributes. The saved
model must also pass onnx.checker.check_model whenever the original does.
The writer now keeps all of these; compare-onnx-fields.py (meson test
onnx-writer-lossless) checks every field without these normalisations.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def canon_domain(d):
    return "" if d in ("", "ai.onnx", "onnx") else d


def dense(t):
    return numpy_helper.to_array(t)


def sparse_dense(sp):
    values = numpy_helper.to_array(sp.values)
    indices = numpy_helper.to_array(sp.indices)
    shape = tuple(sp.dims)
    out = np.zeros(shape, dtype=values.dtype)
    flat = out.reshape(-1)
    if indices.ndim == 2:
        indices = np.ravel_multi_index(indices.T, shape) if len(shape) else indices
    flat[indices.reshape(-1)] = values.reshape(-1)
    return out


def same_array(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return np.array_equal(a, b, equal_nan=True) or a.tobytes() == b.tobytes()
    return np.array_equal(a, b)


class Diff:
    def __init__(self):
        self.items = []

    def add(self, where, text):
        if len(self.items) < 20:
            self.items.append(f"{where}: {text}")


def type_text(tp, with_shape=True):
    which = tp.WhichOneof("value")
    if which is None:
        return "?"
    if which in ("tensor_type", "sparse_tensor_type"):
        t = getattr(tp, which)
        text = f"{which}({t.elem_type})"
        if with_shape and t.HasField("shape"):
            dims = []
            for d in t.shape.dim:
                w = d.WhichOneof("value")
                if w == "dim_value" and d.dim_value >= 0:
                    dims.append(str(d.dim_value))
                elif w == "dim_param" and d.dim_param:
                    dims.append(d.dim_param)
                else:
                    dims.append("?")
            text += "[" + ",".join(dims) + "]"
        return text
    if which == "sequence_type":
        return "seq(" + type_text(tp.sequence_type.elem_type, with_shape) + ")"
    if which == "optional_type":
        return "optional(" + type_text(tp.optional_type.elem_type, with_shape) + ")"
    if which == "map_type":
        return f"map({tp.map_type.key_type}," + type_text(tp.map_type.value_type, with_shape) + ")"
    return which


def vi_text(vi):
    if not vi.HasField("type"):
        return "untyped"
    return type_text(vi.type)


def compare_tensor(a, b, where, diff, check_name=True):
    if check_name and a.name != b.name:
        diff.add(where, f"name {a.name!r} != {b.name!r}")
    if a.data_type != b.data_type:
        diff.add(where, f"data_type {a.data_type} != {b.data_type}")
        return
    if list(a.dims) != list(b.dims):
        diff.add(where, f"dims {list(a.dims)} != {list(b.dims)}")
        return
    if a.doc_string != b.doc_string:
        diff.add(where, "doc_string differs")
    if a.data_type == onnx.TensorProto.STRING:
        if list(a.string_data) != list(b.string_data):
            diff.add(where, "string_data differs")
        return
    if not same_array(dense(a), dense(b)):
        diff.add(where, "values differ")


def compare_attribute(a, b, where, diff):
    if a.type != b.type:
        # The IR keeps lists of sparse tensors dense.
        if not (a.type == onnx.AttributeProto.SPARSE_TENSORS and b.type == onnx.AttributeProto.TENSORS):
            diff.add(where, f"type {a.type} != {b.type}")
            return
    if a.ref_attr_name != b.ref_attr_name:
        diff.add(where, f"ref_attr_name {a.ref_attr_name!r} != {b.ref_attr_name!r}")
    if a.doc_string != b.doc_string:
        diff.add(where, "doc_string differs")
    if a.ref_attr_name:
        return
    t = a.type
    A = onnx.AttributeProto
    if t == A.FLOAT:
        if not (np.float32(a.f) == np.float32(b.f) or (np.isnan(a.f) and np.isnan(b.f))):
            diff.add(where, f"f {a.f} != {b.f}")
    elif t == A.INT:
        if a.i != b.i:
            diff.add(where, f"i {a.i} != {b.i}")
    elif t == A.STRING:
        if a.s != b.s:
            diff.add(where, f"s {a.s!r} != {b.s!r}")
    elif t == A.TENSOR:
        compare_tensor(a.t, b.t, where, diff)
    elif t == A.SPARSE_TENSOR:
        if not same_array(sparse_dense(a.sparse_tensor), sparse_dense(b.sparse_tensor)):
            diff.add(where, "sparse tensor values differ")
    elif t == A.GRAPH:
        compare_graph(a.g, b.g, where + "/g", diff)
    elif t == A.FLOATS:
        if not np.array_equal(np.float32(list(a.floats)), np.float32(list(b.floats)), equal_nan=True):
            diff.add(where, f"floats {list(a.floats)} != {list(b.floats)}")
    elif t == A.INTS:
        if list(a.ints) != list(b.ints):
            diff.add(where, f"ints {list(a.ints)} != {list(b.ints)}")
    elif t == A.STRINGS:
        if list(a.strings) != list(b.strings):
            diff.add(where, "strings differ")
    elif t == A.TENSORS:
        if len(a.tensors) != len(b.tensors):
            diff.add(where, "tensor count differs")
        for i, (x, y) in enumerate(zip(a.tensors, b.tensors)):
            compare_tensor(x, y, f"{where}[{i}]", diff)
    elif t == A.SPARSE_TENSORS:
        if len(a.sparse_tensors) != len(b.tensors):
            diff.add(where, "sparse tensor count differs")
        for i, (x, y) in enumerate(zip(a.sparse_tensors, b.tensors)):
            if not same_array(sparse_dense(x), dense(y)):
                diff.add(f"{where}[{i}]", "values differ")
    elif t == A.GRAPHS:
        if len(a.graphs) != len(b.graphs):
            diff.add(where, "graph count differs")
        for i, (x, y) in enumerate(zip(a.graphs, b.graphs)):
            compare_graph(x, y, f"{where}[{i}]", diff)
    elif t == A.TYPE_PROTO:
        if type_text(a.tp, False) != type_text(b.tp, False):
            diff.add(where, f"type {type_text(a.tp, False)} != {type_text(b.tp, False)}")
    elif t == A.TYPE_PROTOS:
        if [type_text(x, False) for x in a.type_protos] != [type_text(x, False) for x in b.type_protos]:
            diff.add(where, "types differ")


def compare_node(a, b, where, diff):
    for field in ("op_type", "doc_string"):
        if getattr(a, field) != getattr(b, field):
            diff.add(where, f"{field} {getattr(a, field)!r} != {getattr(b, field)!r}")
    if a.name != b.name:
        diff.add(where, f"name {a.name!r} != {b.name!r}")
    if canon_domain(a.domain) != canon_domain(b.domain):
        diff.add(where, f"domain {a.domain!r} != {b.domain!r}")
    if list(a.input) != list(b.input):
        diff.add(where, f"inputs {list(a.input)} != {list(b.input)}")
    if list(a.output) != list(b.output):
        diff.add(where, f"outputs {list(a.output)} != {list(b.output)}")
    if [x.name for x in a.attribute] != [x.name for x in b.attribute]:
        diff.add(where, f"attributes {[x.name for x in a.attribute]} != {[x.name for x in b.attribute]}")
        return
    for x, y in zip(a.attribute, b.attribute):
        compare_attribute(x, y, f"{where}.{x.name}", diff)


def compare_value_infos(a, b, where, diff):
    if [v.name for v in a] != [v.name for v in b]:
        diff.add(where, f"names {[v.name for v in a]} != {[v.name for v in b]}")
        return
    for x, y in zip(a, b):
        if vi_text(x) != vi_text(y):
            diff.add(f"{where} {x.name}", f"type {vi_text(x)} != {vi_text(y)}")
        if x.doc_string != y.doc_string:
            diff.add(f"{where} {x.name}", "doc_string differs")


def compare_graph(a, b, where, diff):
    if a.name != b.name:
        diff.add(where, f"name {a.name!r} != {b.name!r}")
    if a.doc_string != b.doc_string:
        diff.add(where, "doc_string differs")
    if len(a.node) != len(b.node):
        diff.add(where, f"{len(a.node)} nodes != {len(b.node)}")
    for i, (x, y) in enumerate(zip(a.node, b.node)):
        compare_node(x, y, f"{where}/node[{i}]", diff)
    compare_value_infos(a.input, b.input, where + " input", diff)
    compare_value_infos(a.output, b.output, where + " output", diff)

    inits_a = {t.name: ("dense", t) for t in a.initializer}
    inits_a.update({t.values.name: ("sparse", t) for t in a.sparse_initializer})
    inits_b = {t.name: ("dense", t) for t in b.initializer}
    if sorted(inits_a) != sorted(inits_b):
        diff.add(where, f"initializers {sorted(inits_a)} != {sorted(inits_b)}")
    for name, (kind, t) in inits_a.items():
        if name not in inits_b:
            continue
        if kind == "dense":
            compare_tensor(t, inits_b[name][1], f"{where} initializer {name}", diff)
        elif not same_array(sparse_dense(t), dense(inits_b[name][1])):
            diff.add(f"{where} sparse initializer {name}", "values differ")

    # value_info: order is free; initializers' entries are normalised away.
    skip = set(inits_a)
    vi_a = {v.name: v for v in a.value_info if v.name not in skip}
    vi_b = {v.name: v for v in b.value_info if v.name not in skip}
    # The reader drops value_info naming no value of the graph.
    known = set()
    for n in a.node:
        known.update(n.output)
    vi_a = {k: v for k, v in vi_a.items() if k in known and v.HasField("type")}
    vi_b = {k: v for k, v in vi_b.items() if v.HasField("type")}
    if sorted(vi_a) != sorted(vi_b):
        diff.add(where, f"value_info names {sorted(vi_a)[:8]}... != {sorted(vi_b)[:8]}...")
    for name in vi_a:
        if name in vi_b and vi_text(vi_a[name]) != vi_text(vi_b[name]):
            diff.add(f"{where} value_info {name}", f"{vi_text(vi_a[name])} != {vi_text(vi_b[name])}")


def opsets(entries):
    return {canon_domain(o.domain): o.version for o in entries}


def compare_model(a, b, diff):
    for field in ("ir_version", "producer_name", "producer_version", "domain", "model_version", "doc_string"):
        if getattr(a, field) != getattr(b, field):
            diff.add("model", f"{field} {getattr(a, field)!r} != {getattr(b, field)!r}")
    if opsets(a.opset_import) != opsets(b.opset_import):
        diff.add("model", f"opsets {opsets(a.opset_import)} != {opsets(b.opset_import)}")
    if [(p.key, p.value) for p in a.metadata_props] != [(p.key, p.value) for p in b.metadata_props]:
        diff.add("model", "metadata_props differ")
    compare_graph(a.graph, b.graph, "graph", diff)
    if len(a.functions) != len(b.functions):
        diff.add("model", "function count differs")
    for fa, fb in zip(a.functions, b.functions):
        where = f"function {fa.name}"
        for field in ("name", "doc_string"):
            if getattr(fa, field) != getattr(fb, field):
                diff.add(where, f"{field} differs")
        if canon_domain(fa.domain) != canon_domain(fb.domain):
            diff.add(where, "domain differs")
        if (list(fa.input), list(fa.output), list(fa.attribute)) != (list(fb.input), list(fb.output), list(fb.attribute)):
            diff.add(where, "signature differs")
        if opsets(fa.opset_import) != opsets(fb.opset_import):
            diff.add(where, "opsets differ")
        if len(fa.node) != len(fb.node):
            diff.add(where, "node count differs")
        for i, (x, y) in enumerate(zip(fa.node, fb.node)):
            compare_node(x, y, f"{where}/node[{i}]", diff)


def check(model):
    try:
        onnx.checker.check_model(model)
        return None
    except Exception as e:  # noqa: BLE001 - any checker failure is reported
        return str(e).splitlines()[0] if str(e) else type(e).__name__


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        pairs = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    print(f"1..{len(pairs)}")
    failed = 0
    for n, (orig_path, saved_path) in enumerate(pairs, 1):
        diff = Diff()
        try:
            a = onnx.load(orig_path, load_external_data=False)
            b = onnx.load(saved_path)
            compare_model(a, b, diff)
            if check(a) is None:
                problem = check(b)
                if problem is not None:
                    diff.add("checker", problem)
        except Exception as e:  # noqa: BLE001
            diff.add("load", f"{type(e).__name__}: {e}")
        if diff.items:
            failed += 1
            print(f"not ok {n} - {orig_path}")
            for item in diff.items:
                print(f"# {item}")
        else:
            print(f"ok {n} - {orig_path}")
    print(f"# {len(pairs) - failed} of {len(pairs)} saved models equivalent to their originals")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
