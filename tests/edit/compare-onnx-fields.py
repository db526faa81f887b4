#!/usr/bin/env python3
"""Compares every protobuf field of ONNX models saved by Graft with the originals.

Usage: compare-onnx-fields.py LISTFILE [--summary]
  LISTFILE has one "ORIGINAL<TAB>SAVED" pair per line.

Walks both ModelProtos field by field (ListFields recursion over every
message, repeated fields index by index, and each message's unknown fields:
those of a newer onnx.proto) and
reports each difference with its path ("graph.node[3].attribute[0].tp").
Prints TAP: "ok N - original" or "not ok N - original" with the differences
as '#' comments; with --summary it also prints, per field path with the
indices removed, how many models differ there.

The only normalisations, each one a choice the ONNX format leaves free:
- A scalar field present with its default value equals the field absent
  (proto2 presence: "" / 0 written or not mean the same to every ONNX
  consumer; the writer omits empty strings).
- A tensor's data is compared as its decoded values, bit for bit
  (numpy_helper.to_array), not by encoding: raw_data vs float_data /
  int32_data / int64_data... are the same values. External data is
  compared by value too: Graft embeds it (model/onnx/writer.h), so
  data_location and external_data are not compared.
Everything else — order of repeated fields included — must be identical.
"""
import os
import sys
from collections import Counter

import numpy as np
import onnx
from onnx import numpy_helper
from google.protobuf import unknown_fields
from google.protobuf.descriptor import FieldDescriptor

TENSOR_DATA_FIELDS = {"raw_data", "float_data", "int32_data", "string_data", "int64_data",
                      "double_data", "uint64_data", "data_location", "external_data"}


def tensor_values(t, base_dir):
    if t.data_type == onnx.TensorProto.STRING:
        return ("strings", tuple(t.string_data))
    if t.data_location == onnx.TensorProto.EXTERNAL and base_dir is not None:
        t2 = onnx.TensorProto()
        t2.CopyFrom(t)
        onnx.external_data_helper.load_external_data_for_tensor(t2, base_dir)
        t2.data_location = onnx.TensorProto.DEFAULT
        del t2.external_data[:]
        t = t2
    try:
        a = numpy_helper.to_array(t)
    except Exception as e:  # noqa: BLE001 - a broken tensor is reported as such
        return ("undecodable", type(e).__name__)
    return ("array", str(a.dtype), a.shape, a.tobytes())


def unknown(message):
    """Fields of a newer onnx.proto than the pinned one, as (number, wire
    type, data), sorted."""
    return sorted((f.field_number, f.wire_type, repr(f.data)) for f in unknown_fields.UnknownFieldSet(message))


def is_repeated(field):
    # protobuf ≥ 5.28 has is_repeated; label is gone from upb descriptors.
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == FieldDescriptor.LABEL_REPEATED


class Walker:
    def __init__(self, base_a, base_b):
        self.diffs = []
        self.base_a = base_a
        self.base_b = base_b

    def add(self, path, text):
        self.diffs.append((path, text))

    def message(self, a, b, path):
        fields = {f.name: f for f, _ in a.ListFields()}
        fields.update({f.name: f for f, _ in b.ListFields()})
        is_tensor = a.DESCRIPTOR.full_name == "onnx.TensorProto"
        for name, field in sorted(fields.items(), key=lambda kv: kv[1].number):
            if is_tensor and name in TENSOR_DATA_FIELDS:
                continue
            self.field(a, b, field, f"{path}.{name}" if path else name)
        if is_tensor and tensor_values(a, self.base_a) != tensor_values(b, self.base_b):
            self.add(f"{path}.<values>", "tensor values differ")
        if unknown(a) != unknown(b):
            self.add(f"{path}.<unknown fields>" if path else "<unknown fields>",
                     f"{short(unknown(a))} != {short(unknown(b))}")


    def field(self, a, b, field, path):
        va, vb = getattr(a, field.name), getattr(b, field.name)
        if is_repeated(field):
            if len(va) != len(vb):
                self.add(path, f"{len(va)} entries != {len(vb)}" + self.names_hint(va, vb))
                return
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                for i, (x, y) in enumerate(zip(va, vb)):
                    self.message(x, y, f"{path}[{i}]")
            elif field.type == FieldDescriptor.TYPE_FLOAT:
                if np.float32(list(va)).tobytes() != np.float32(list(vb)).tobytes():
                    self.add(path, "floats differ")
            elif list(va) != list(vb):
                self.add(path, f"{short(list(va))} != {short(list(vb))}")
            return
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if a.HasField(field.name) != b.HasField(field.name):
                self.add(path, "present in one only")
            else:
                self.message(va, vb, path)
            return
        if field.type == FieldDescriptor.TYPE_FLOAT:
            if np.float32(va).tobytes() != np.float32(vb).tobytes():
                self.add(path, f"{va!r} != {vb!r}")
        elif va != vb:
            self.add(path, f"{short(va)} != {short(vb)}")

    @staticmethod
    def names_hint(va, vb):
        try:
            na = [x.name for x in va]
            nb = [x.name for x in vb]
        except AttributeError:
            return ""
        missing = [n for n in na if n not in nb]
        extra = [n for n in nb if n not in na]
        return f" (missing {short(missing)}, extra {short(extra)})"


def short(value):
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def generic_path(path):
    out, depth = [], 0
    for ch in path:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def compare_files(orig_path, saved_path):
    a = onnx.load(orig_path, load_external_data=False)
    b = onnx.load(saved_path, load_external_data=False)
    walker = Walker(os.path.dirname(os.path.abspath(orig_path)), os.path.dirname(os.path.abspath(saved_path)))
    walker.message(a, b, "")
    return walker.diffs


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    summary = "--summary" in sys.argv
    if len(args) != 1:
        sys.exit(__doc__)
    with open(args[0]) as f:
        pairs = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    print(f"1..{len(pairs)}")
    failed = 0
    by_path = Counter()
    for n, (orig_path, saved_path) in enumerate(pairs, 1):
        try:
            diffs = compare_files(orig_path, saved_path)
        except Exception as e:  # noqa: BLE001 - reported as a failure of this pair
            diffs = [("<load>", f"{type(e).__name__}: {e}")]
        for p in sorted({generic_path(p) for p, _ in diffs}):
            by_path[p] += 1
        if diffs:
            failed += 1
            print(f"not ok {n} - {orig_path}")
            for path, text in diffs[:20]:
                print(f"# {path}: {text}")
        else:
            print(f"ok {n} - {orig_path}")
    if summary:
        for p, count in by_path.most_common():
            print(f"# summary {count:5d} {p}")
    print(f"# {len(pairs) - failed} of {len(pairs)} saved models identical field by field")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
