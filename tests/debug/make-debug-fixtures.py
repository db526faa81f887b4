"""Planted faults in a real export, for graft-cli run --validate and debug
reduce:  make-debug-fixtures.py SRC.onnx OUTDIR

  div0.onnx     SRC with a Div by a zero constant ('planted_div') after the
                first ReLU of layer2.0: the ReLU's zeros become NaN, the
                rest Inf, and everything after it is NaN.
  bad-reshape.onnx  SRC with a Reshape ('planted_reshape') to a shape of
                the wrong size after layer3.0's first ReLU: runtimes fail there.
  mystery.onnx  SRC with an op of an unknown domain ('planted_mystery').
  swapped.onnx  SRC with the weights of two convolutions of the same shape
                exchanged: the first of them is where the outputs start to
                differ from SRC's. planted.txt names that conv.
  r18-div0.pt, r18-div0.pt2  a Div by zero in a TorchScript trace and a
                torch.export program (torch_div0).
  encoder.onnx, encoder-input.npy  a TransformerEncoder whose first
                LayerNorm overflows in float16 on that input (layernorm_overflow).
  input.npy     the input both are checked on (seeded, [-1, 1)).
  ort-values/   onnxruntime's value of every tensor of SRC on
                input.npy, one .npy per value, named as graft-cli run -o
                names files (characters outside [A-Za-z0-9._-] become '_')."""
import os
import re
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def safe_name(name):
    s = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return ("_" + s[1:] if s.startswith(".") else s)[:200]


def plant_div(model):
    graph = model.graph
    target = next(n for n in graph.node if n.name.startswith("/layer2/") and n.op_type == "Relu")
    relu_out = target.output[0]
    graph.initializer.append(numpy_helper.from_array(np.array(0.0, dtype=np.float32), "planted_zero"))
    div = helper.make_node("Div", [relu_out, "planted_zero"], ["planted_div_output"], name="planted_div")
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == relu_out and node is not target:
                node.input[i] = "planted_div_output"
    index = list(graph.node).index(target)
    graph.node.insert(index + 1, div)
    return model


def plant_bad_reshape(model):
    """A Reshape to a shape of the wrong size after layer3's first ReLU,
    followed by its inverse: fine in shape inference's eyes when the dims
    are unknown, an error in any runtime."""
    graph = model.graph
    target = next(n for n in graph.node if n.name.startswith("/layer3/") and n.op_type == "Relu")
    out = target.output[0]
    graph.initializer.append(numpy_helper.from_array(np.array([1, 7, 7, 7], dtype=np.int64), "planted_shape"))
    reshape = helper.make_node("Reshape", [out, "planted_shape"], ["planted_reshape_output"], name="planted_reshape")
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == out and node is not target:
                node.input[i] = "planted_reshape_output"
    graph.node.insert(list(graph.node).index(target) + 1, reshape)
    return model


def plant_unknown_op(model):
    """The planted Div made an op of a domain no runtime has
    ('com.example::Mystery'): Graft cannot even plan the model."""
    model = plant_div(model)
    node = next(n for n in model.graph.node if n.name == "planted_div")
    node.op_type, node.domain, node.name = "Mystery", "com.example", "planted_mystery"
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    return model


def swap_weights(model):
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    convs = [n for n in graph.node if n.op_type == "Conv" and n.input[1] in inits]
    by_shape = {}
    for conv in convs:
        by_shape.setdefault(tuple(inits[conv.input[1]].dims), []).append(conv)
    pair = next(v for v in by_shape.values() if len(v) >= 2 and len(v[0].name) > 0)
    first, second = pair[0], pair[1]
    a, b = inits[first.input[1]], inits[second.input[1]]
    data_a, data_b = numpy_helper.to_array(a).copy(), numpy_helper.to_array(b).copy()
    a.CopyFrom(numpy_helper.from_array(data_b, a.name))
    b.CopyFrom(numpy_helper.from_array(data_a, b.name))
    return model, first.name


def dump_values(path, x, outdir):
    import onnxruntime as ort
    model = onnx.load(path)
    known = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for out in node.output:
            if out and out not in known:
                model.graph.output.append(helper.make_empty_tensor_value_info(out))
                known.add(out)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, {session.get_inputs()[0].name: x})
    os.makedirs(outdir, exist_ok=True)
    for name, value in zip(names, values):
        np.save(os.path.join(outdir, safe_name(name) + ".npy"), value)


def torch_div0(outdir):
    """tests/fixtures/vision_models.py's ResNet-18 with a forward hook on
    layer2.0's ReLU that divides by a zero tensor, traced (r18-div0.pt) and
    exported (r18-div0.pt2) at 1x3x64x64."""
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
    import vision_models
    torch.manual_seed(0)
    model = vision_models.resnet18().eval()
    model.layer2[0].relu.register_forward_hook(lambda module, inputs, output: output / torch.zeros(()))
    x = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        torch.jit.trace(model, x).save(os.path.join(outdir, "r18-div0.pt"))
        torch.export.save(torch.export.export(model, (x,)), os.path.join(outdir, "r18-div0.pt2"))


def layernorm_overflow(outdir):
    """torch.nn.TransformerEncoder (2 pre-norm layers, d_model 64) exported
    at opset 14, where LayerNorm is decomposed (ReduceMean, Sub, Pow, ...),
    and an input of magnitude ~400: the squares of the first LayerNorm, the
    first thing the input meets, pass float16's 65504 and overflow (with
    post-norm layers the attention's scores would overflow first)."""
    import torch
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, norm_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    x = torch.randn(8, 1, 64)
    with torch.no_grad():
        torch.onnx.export(model, (x,), os.path.join(outdir, "encoder.onnx"), opset_version=14, input_names=["src"],
                          output_names=["output"], dynamo=False)
    np.save(os.path.join(outdir, "encoder-input.npy"), (x * 400).numpy())


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(7)
    shape = [d.dim_value or 1 for d in onnx.load(src).graph.input[0].type.tensor_type.shape.dim]
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    np.save(os.path.join(outdir, "input.npy"), x)
    onnx.save(plant_div(onnx.load(src)), os.path.join(outdir, "div0.onnx"))
    onnx.save(plant_bad_reshape(onnx.load(src)), os.path.join(outdir, "bad-reshape.onnx"))
    onnx.save(plant_unknown_op(onnx.load(src)), os.path.join(outdir, "mystery.onnx"))
    swapped, conv = swap_weights(onnx.load(src))
    onnx.save(swapped, os.path.join(outdir, "swapped.onnx"))
    with open(os.path.join(outdir, "planted.txt"), "w") as f:
        f.write(conv + "\n")
    dump_values(src, x, os.path.join(outdir, "ort-values"))
    torch_div0(outdir)
    layernorm_overflow(outdir)


main()
