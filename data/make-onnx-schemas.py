"""Writes data/onnx-schemas.tsv, the inputs, outputs and attributes of
every ONNX operator version, from the operator schemas of the pinned onnx
package (onnx.defs.get_all_schemas_with_history()). Graft's op picker lists
an op's attributes with their types and defaults from it, and set-attribute
refuses a name or a type the op's schema does not have.

  tests/python data/make-onnx-schemas.py data/onnx-schemas.tsv
  tests/python data/make-onnx-schemas.py --check data/onnx-schemas.tsv

One schema version a line, tab-separated: the domain ("" for the default
one), the op, the opset version it came in, "deprecated" or "", the inputs
and the outputs (space-separated names, "?" after an optional one, "..."
after a variadic one), then one field per attribute: "name:type" followed
by "!" when it is required, "=VALUE" when it has a default that text can
show (ints and floats as "[1, 2]"), or "?" when it is optional without one
(or with a tensor or graph default)."""
import numpy
import onnx
from onnx import defs, helper

from generated_data import write_or_check

TEXT_TYPES = {
    defs.OpSchema.AttrType.INT: "int",
    defs.OpSchema.AttrType.FLOAT: "float",
    defs.OpSchema.AttrType.STRING: "string",
    defs.OpSchema.AttrType.INTS: "ints",
    defs.OpSchema.AttrType.FLOATS: "floats",
    defs.OpSchema.AttrType.STRINGS: "strings",
}


def type_name(attribute_type):
    return TEXT_TYPES.get(attribute_type, attribute_type.name.lower())


def number(value):
    return str(numpy.float32(value))


def format_default(proto):
    value = helper.get_attribute_value(proto)
    if proto.type == onnx.AttributeProto.INT:
        return str(value)
    if proto.type == onnx.AttributeProto.FLOAT:
        return number(value)
    if proto.type == onnx.AttributeProto.STRING:
        text = value.decode("utf-8")
        return None if any(c in text for c in "\t\n") else text
    if proto.type == onnx.AttributeProto.INTS:
        return "[" + ", ".join(str(v) for v in value) + "]"
    if proto.type == onnx.AttributeProto.FLOATS:
        return "[" + ", ".join(number(v) for v in value) + "]"
    if proto.type == onnx.AttributeProto.STRINGS:
        return "[" + ", ".join(v.decode("utf-8") for v in value) + "]"
    return None


def parameters(formal):
    marks = {defs.OpSchema.FormalParameterOption.Optional: "?",
             defs.OpSchema.FormalParameterOption.Variadic: "..."}
    return " ".join(p.name + marks.get(p.option, "") for p in formal)


def attribute_field(attribute):
    field = f"{attribute.name}:{type_name(attribute.type)}"
    if attribute.required:
        return field + "!"
    default = attribute.default_value
    text = format_default(default) if default is not None and default.type != 0 else None
    return field + ("?" if text is None else "=" + text)


def lines():
    header = f"# ONNX operator schemas of onnx {onnx.__version__}, made by data/make-onnx-schemas.py\n"
    rows = []
    for schema in defs.get_all_schemas_with_history():
        fields = [schema.domain, schema.name, str(schema.since_version),
                  "deprecated" if schema.deprecated else "",
                  parameters(schema.inputs), parameters(schema.outputs)]
        fields += [attribute_field(a) for _, a in sorted(schema.attributes.items())]
        rows.append("\t".join(fields) + "\n")
    return header + "".join(sorted(rows))


def main():
    write_or_check(lines(), f"onnx {onnx.__version__}")


if __name__ == "__main__":
    main()
