"""Checks an SVG written by `graft-cli render` against the model it shows,
reading the model with its own library (onnx, torch.jit):

    check-svg.py SVG MODEL [EXPECTED_TEXT...]

The SVG must be well-formed XML (xml.etree), have no glyph outlines, show
every operator type of the model as a <text> element, and for ONNX every
node named by module path ("/layer1/layer1.0/conv1/Conv") by its path
within its group box ("conv1/Conv"); each EXPECTED_TEXT must be a <text>
exactly. Prints one line of counts; exits non-zero naming what is missing.

    check-svg.py --hostile OUT.onnx

writes a small ONNX model whose node and value names hold characters XML
must escape or cannot hold at all, for the escaping test.
"""
import sys
import xml.etree.ElementTree as ElementTree

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE_NAME = "/blk<1>&\"q\"'/Relu\x01\x7f"


def onnx_operators(path):
    import onnx

    graph = onnx.load(path, load_external_data=False).graph
    return [(node.name, node.op_type) for node in graph.node]


def torchscript_operators(path):
    import torch

    kinds = []

    def walk(block):
        for node in block.nodes():
            kinds.append((None, node.kind()))
            for inner in node.blocks():
                walk(inner)

    walk(torch.jit.load(path, map_location="cpu").inlined_graph)
    # Constants, attribute reads and list literals are listed in their
    # readers' boxes ("stride = [1, 1]").
    return [(name, kind) for name, kind in kinds
            if kind not in ("prim::Constant", "prim::GetAttr", "prim::ListConstruct")]


def as_xml_text(name):
    """name as XML 1.0 can hold it: the controls it forbids become U+FFFD."""
    return "".join("\ufffd" if ord(c) < 0x20 and c not in "\t\n\r" else c for c in name)


def fail(message):
    sys.exit(f"check-svg: {message}")


def check(svg_path, model_path, expected):
    try:
        root = ElementTree.parse(svg_path).getroot()
    except ElementTree.ParseError as error:
        fail(f"{svg_path} is not well-formed XML: {error}")
    if root.tag != SVG + "svg":
        fail(f"the root element is {root.tag}, not svg")
    elements = list(root.iter())
    texts = [element.text or "" for element in elements if element.tag == SVG + "text"]
    shown = set(texts)
    if any(element.tag in (SVG + "symbol", SVG + "use") for element in elements):
        fail("glyphs drawn as outlines (<symbol>/<use>)")

    operators = torchscript_operators(model_path) if model_path.endswith(".pt") else onnx_operators(model_path)
    missing_ops = sorted({op for _, op in operators
                          if op not in shown and not any(t.endswith("← " + op) for t in shown)})
    if missing_ops:
        fail(f"operator types not shown as <text>: {missing_ops}")
    missing_names = [name for name, _ in operators
                     if name and name.startswith("/") and name.count("/") >= 2
                     and not any("/" in t and as_xml_text(name).endswith("/" + t) for t in shown)]
    if missing_names:
        fail(f"{len(missing_names)} node names not shown as <text>, e.g. {missing_names[:5]}")
    missing_texts = [t for t in expected if t not in shown]
    if missing_texts:
        fail(f"not shown as <text>: {missing_texts}")
    print(f"{len(elements)} elements, {len(texts)} <text>, {len({op for _, op in operators})} operator types, "
          f"{sum(1 for name, _ in operators if name and name.count('/') >= 2)} module paths")


def write_hostile(path):
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y<&>"], name=HOSTILE_NAME)
    graph = helper.make_graph([node], "hostile",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y<&>", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--hostile":
        write_hostile(sys.argv[2])
    elif len(sys.argv) >= 3:
        check(sys.argv[1], sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
