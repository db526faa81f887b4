#!/usr/bin/env python3
"""graft-cli convert measured against PyTorch, onnxruntime and torch.onnx.export.

    tests/python run-convert.py GRAFT_CLI [CASE...]

For each case (a module, traced or scripted, saved with torch.jit.save into
tests/fixtures-generated/convert and kept while the module definitions
here and in tests/fixtures/vision_models.py are unchanged), the TorchScript file is converted with
graft-cli convert and the ONNX file must:
  - pass onnx.checker.check_model(full_check=True) and strict shape inference;
  - give onnxruntime outputs within 1e-4·max|ref| of PyTorch's at the export
    shape and, where an input dim was made dynamic, at another size;
  - give the same within the same bound in Graft's own runtime (graft-cli run);
  - for data-dependent control flow, take both paths (inputs chosen to go
    different ways);
  - have no more nodes than torch.onnx.export's file of the same module for
    the torchvision models (the count is reported for every case).
Prints TAP, one test per case, with the figures as comments.

ResNet-18, MobileNetV3-Small, GoogLeNet and ViT-B/16 come from torchvision
where it imports, else from tests/fixtures/vision_models.py (torchvision's
structure, names and ops; random weights either way).
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from typing import List, Tuple

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("GRAFT_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "fixtures"))
sys.path.insert(0, HERE)
import op_modules  # noqa: E402
import vision_models  # noqa: E402

OUT = os.path.join(SOURCE, "tests", "fixtures-generated", "convert")


def modules_source():
    """The text that defines the modules: the archives are made again when it changes."""
    with open(__file__) as f:
        text = f.read()
    with open(vision_models.__file__) as f, open(op_modules.__file__) as g:
        return text[text.index("-- modules\n"):text.index("-- helpers\n")] + f.read() + g.read()


MODULES_DIGEST = __import__("hashlib").sha256(modules_source().encode()).hexdigest()[:16]


# ---------------------------------------------------------------- modules

class IfOnTensor(nn.Module):
    """A branch on data: both paths must survive scripting and conversion."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            y = torch.relu(self.lin(x)) * 2
        else:
            y = self.lin(x) - 1
        return y


class LoopOverModuleList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.norm(x)


class WhileOnTensor(nn.Module):
    """Doubles until the largest magnitude reaches the limit (a data-dependent trip count)."""

    def forward(self, x, limit: float):
        k = 0
        while bool(x.abs().max() < limit) and k < 20:
            x = x * 2.0 + 0.5
            k += 1
        return x, k


class TupleReturn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x) -> Tuple[torch.Tensor, torch.Tensor]:
        y = self.bn(self.conv(x))
        z = y.mean([2, 3])
        return y, z[:, 1:]


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(10, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1]), h


def transformer_encoder():
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2, enable_nested_tensor=False)


def calibrated(make):
    """Fresh BatchNorm statistics make MobileNet's logits rounding noise: gather some, as training would."""
    def make_calibrated():
        model = make()
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.momentum = None
        model.train()
        with torch.no_grad():
            for _ in range(2):
                model(torch.randn(4, 3, 224, 224))
        return model.eval()
    return make_calibrated


IMAGE = {"name": "x", "shape": [1, 3, 224, 224], "dynamic": {0: "batch"}, "other": [2, 3, 224, 224]}

# name, factory, modes, inputs, torchvision model (node count no larger than torch.onnx.export's)
CASES = [
    ("resnet18", vision_models.resnet18, ("traced", "scripted"), [IMAGE], True),
    ("mobilenet_v3_small", calibrated(vision_models.mobilenet_v3_small), ("traced", "scripted"), [IMAGE], True),
    ("googlenet", vision_models.googlenet, ("traced", "scripted"), [IMAGE], True),
    ("vit_b_16", vision_models.vit_b_16, ("traced", "scripted"), [IMAGE], True),
    ("transformer_encoder", transformer_encoder, ("traced", "scripted"),
     [{"name": "src", "shape": [2, 7, 32], "dynamic": {0: "batch", 1: "seq"}, "other": [3, 5, 32]}], False),
    # the fused fast path (_transformer_encoder_layer_fwd) with layer norms decomposed before opset 17
    ("transformer_encoder_opset13", transformer_encoder, ("traced", "scripted"),
     [{"name": "src", "shape": [2, 7, 32], "dynamic": {0: "batch", 1: "seq"}, "other": [3, 5, 32], "opset": 13}],
     False),
    ("lstm", LSTMModel, ("traced", "scripted"),
     [{"name": "x", "shape": [2, 5, 10], "dynamic": {0: "batch", 1: "seq"}, "other": [3, 9, 10]}], False),
    ("if_on_tensor", IfOnTensor, ("scripted",),
     [{"name": "x", "shape": [2, 4], "dynamic": {0: "batch"}, "other": [3, 4], "paths": ["positive", "negative"]}],
     False),
    ("loop_over_modulelist", LoopOverModuleList, ("traced", "scripted"),
     [{"name": "x", "shape": [2, 8], "dynamic": {0: "batch"}, "other": [5, 8]}], False),
    ("while_on_tensor", WhileOnTensor, ("scripted",),
     [{"name": "x", "shape": [2, 3], "dynamic": {0: "batch"}, "other": [4, 3], "paths": ["small", "large"]},
      {"name": "limit", "scalar": 10.0}], False),
    ("tuple_return", TupleReturn, ("traced", "scripted"),
     [{"name": "x", "shape": [1, 3, 8, 8], "dynamic": {0: "batch"}, "other": [2, 3, 8, 8]}], False),
    # op lowerings (tests/convert/op_modules.py); "113" modes are made by Debian's torch 1.13
    ("causal_attention", op_modules.CausalAttention, ("traced", "scripted"),
     [{"name": n, "shape": [2, 2, 5, 8], "dynamic": {0: "batch", 2: "seq"}, "other": [3, 2, 7, 8]}
      for n in ("q", "k", "v")], False),
    ("pads", op_modules.Pads, ("traced", "scripted", "traced113", "scripted113"),
     [{"name": "x", "shape": [1, 2, 5, 6], "dynamic": {0: "batch", 2: "h", 3: "w"}, "other": [2, 2, 7, 9]}], False),
    ("pad_to_multiple", op_modules.PadToMultiple, ("traced", "scripted", "traced113", "scripted113"),
     [{"name": "x", "shape": [1, 2, 5, 6], "dynamic": {0: "batch", 2: "h", 3: "w"}, "other": [2, 2, 8, 11]}], False),
    ("cumsum", op_modules.CumulativeSum, ("traced", "scripted", "traced113", "scripted113"),
     [{"name": "x", "shape": [2, 5], "dynamic": {0: "batch", 1: "n"}, "other": [3, 7]}], False),
    ("transposed_conv", op_modules.TransposedConv, ("traced", "scripted", "traced113", "scripted113"),
     [{"name": "x", "shape": [1, 4, 5, 5], "dynamic": {0: "batch", 2: "h", 3: "w"}, "other": [2, 4, 6, 7]}], False),
    ("bidirectional_rnn", op_modules.BidirectionalRNN, ("traced", "scripted", "traced113", "scripted113"),
     [{"name": "x", "shape": [2, 5, 6], "dynamic": {0: "batch", 1: "seq"}, "other": [3, 8, 6]}], False),
    ("layer_norms", op_modules.LayerNorms, ("traced", "scripted", "traced113", "scripted113"),
     [{"name": "x", "shape": [2, 3, 8], "dynamic": {0: "batch"}, "other": [4, 3, 8]}], False),
    ("layer_norms_opset13", op_modules.LayerNorms, ("traced", "scripted113"),
     [{"name": "x", "shape": [2, 3, 8], "dynamic": {0: "batch"}, "other": [4, 3, 8], "opset": 13}], False),
    # Lists grown in loops whose trip count is known only at run time: ONNX sequences. Tracing
    # would bake the trip count, so these are scripted only (and compared with torch.onnx.export
    # of the scripted module, which also writes sequences); two sizes or paths give two trip counts.
    ("grow_rows", op_modules.GrowRows, ("scripted", "scripted113"),
     [{"name": "x", "shape": [3, 4], "dynamic": {0: "n"}, "other": [6, 4], "sequences": True}], False),
    ("while_append", op_modules.WhileAppend, ("scripted", "scripted113"),
     [{"name": "x", "shape": [2, 3], "dynamic": {0: "batch"}, "other": [4, 3], "paths": ["small", "large"],
       "sequences": True}], False),
    ("filter_rows", op_modules.FilterRows, ("scripted", "scripted113"),
     [{"name": "x", "shape": [5, 3], "dynamic": {0: "n"}, "other": [9, 3], "sequences": True}], False),
    ("nested_append", op_modules.NestedAppend, ("scripted", "scripted113"),
     [{"name": "x", "shape": [3, 4], "dynamic": {0: "n", 1: "m"}, "other": [5, 6], "sequences": True}], False),
    ("grow_rows_opset13", op_modules.GrowRows, ("scripted",),
     [{"name": "x", "shape": [3, 4], "dynamic": {0: "n"}, "other": [6, 4], "sequences": True, "opset": 13}], False),
    # lowerings the zoo's library models need ("exported": a torch.export .pt2, dynamic dims as torch.export.Dim)
    ("index_ops", op_modules.IndexOps, ("traced", "scripted", "exported"),
     [{"name": "x", "shape": [2, 6, 5], "dynamic": {0: "batch"}, "other": [3, 6, 5]}], False),
    ("resize_norms", op_modules.ResizeNorms, ("traced", "exported"),
     [{"name": "x", "shape": [2, 4, 6, 6], "dynamic": {0: "batch"}, "other": [3, 4, 6, 6]}], False),
    ("splits_and_grids", op_modules.SplitsAndGrids, ("traced", "scripted", "exported"),
     [{"name": "x", "shape": [2, 4, 3, 4], "dynamic": {0: "batch"}, "other": [3, 4, 3, 4]}], False),
    # the zoo's Swin (roll, the attention mask written through slices), r3d_18 (3-D adaptive pooling),
    # LeViT (index after a full slice) and RAFT (instance norm, linspace, grid_sample, range loops)
    ("shifted_windows", op_modules.ShiftedWindows, ("traced", "exported"),
     [{"name": "x", "shape": [2, 5, 6, 3], "dynamic": {0: "batch"}, "other": [3, 5, 6, 3]},
      {"name": "z", "shape": [6, 3], "other": [6, 3]}], False),
    ("pool3d", op_modules.Pool3d, ("traced", "scripted", "exported"),
     [{"name": "x", "shape": [2, 3, 5, 7, 6], "dynamic": {0: "batch"}, "other": [3, 3, 5, 7, 6]}], False),
    ("index_with_none", op_modules.IndexWithNone, ("traced", "scripted", "exported"),
     [{"name": "x", "shape": [4, 5, 6], "other": [4, 5, 6]}], False),
    ("flow_ops", op_modules.FlowOps, ("traced", "scripted", "exported"),
     [{"name": "x", "shape": [2, 3, 5, 6], "dynamic": {0: "batch"}, "other": [3, 3, 5, 6]},
      {"name": "grid", "shape": [2, 4, 3, 2], "dynamic": {0: "batch"}, "other": [3, 4, 3, 2]}], False),
    ("autocast_off", op_modules.AutocastOff, ("exported",),
     [{"name": "x", "shape": [2, 5, 6], "dynamic": {0: "batch"}, "other": [3, 5, 6]}], False),
    # timm's LeViT: a Dict[str, Tensor] cache the module fills, saved empty or filled
    ("tensor_cache", op_modules.TensorCache, ("scripted",),
     [{"name": "x", "shape": [2, 3], "dynamic": {0: "batch"}, "other": [3, 3]}], False),
    ("tensor_cache_filled", op_modules.FilledTensorCache, ("scripted",),
     [{"name": "x", "shape": [2, 3], "dynamic": {0: "batch"}, "other": [3, 3]}], False),
    ("runtime_shifts", op_modules.RuntimeShifts, ("traced", "scripted"),
     [{"name": "x", "shape": [2, 6, 5], "dynamic": {0: "batch", 1: "h", 2: "w"}, "other": [3, 7, 9]}], False),
    # circular padding: Slice + Concat before opset 19, Pad mode wrap from 19
    ("circular_pad", op_modules.CircularPad, ("traced", "scripted", "traced113", "scripted113"),
     [{"name": "x", "shape": [1, 2, 5, 6], "dynamic": {0: "batch", 2: "h", 3: "w"}, "other": [2, 2, 7, 9],
       "expect_ops": ["Slice", "Concat"], "absent_ops": ["Pad"]}], False),
    ("circular_pad_opset19", op_modules.CircularPad, ("scripted", "traced113"),
     [{"name": "x", "shape": [1, 2, 5, 6], "dynamic": {0: "batch", 2: "h", 3: "w"}, "other": [2, 2, 7, 9],
       "opset": 19, "expect_ops": ["Pad"], "absent_ops": ["Concat"]}], False),
]


# ---------------------------------------------------------------- helpers

def fresh(path):
    """Made from the current module definitions (recorded in PATH.digest)."""
    try:
        with open(path + ".digest") as f:
            return os.path.exists(path) and f.read() == MODULES_DIGEST
    except OSError:
        return False


def mark_fresh(path):
    # a new file, never the old one rewritten: a fixture folder linked
    # from another clone (cp -al) must not see this clone's digest
    tmp = path + ".digest.tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(MODULES_DIGEST)
    os.replace(tmp, path + ".digest")


def make_inputs(specs, shape_key, path, seed):
    """Tensors for the tensor inputs, Python numbers for scalars. A `paths`
    case picks inputs that take each branch: positive/negative values, or
    small/large magnitudes for a loop that runs many or no times."""
    gen = torch.Generator().manual_seed(seed)
    values = []
    for spec in specs:
        if "scalar" in spec:
            values.append(spec["scalar"])
            continue
        x = torch.randn(*spec[shape_key], generator=gen)
        if path == "positive":
            x = x.abs() + 0.1
        elif path == "negative":
            x = -x.abs() - 0.1
        elif path == "small":
            x = x * 0.01
        elif path == "large":
            x = x * 100
        values.append(x)
    return values


def as_numpy(value):
    if torch.is_tensor(value):
        return value.detach().numpy()
    if isinstance(value, float):
        return np.array(value, dtype=np.float32)
    if isinstance(value, bool):
        return np.array(value)
    return np.array(value, dtype=np.int64)


def flatten(result):
    if result is None:  # scripted GoogLeNet's (logits, None, None) in eval mode
        return []
    if isinstance(result, (tuple, list)):
        return [r for item in result for r in flatten(item)]
    return [as_numpy(result)]


def flatten_onnx(outputs):
    """onnxruntime's outputs with each sequence (a Python list) replaced by its tensors, as flatten() does."""
    return [t for out in outputs for t in (out if isinstance(out, list) else [out])]


def count_ops(graph, ops):
    """How many nodes of each type in ops (subgraphs included)."""
    counts = dict.fromkeys(ops, 0)
    for node in graph.node:
        if node.op_type in counts:
            counts[node.op_type] += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                for op, n in count_ops(attr.g, ops).items():
                    counts[op] += n
    return counts


def close(ref, got, worst=None):
    """Within 1e-4·max|ref|; worst ([error, bound], optional) keeps the largest error seen and its bound."""
    ref = np.asarray(ref, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if ref.shape != got.shape:
        return False, "shape %s, expected %s" % (got.shape, ref.shape)
    err = float(np.abs(ref - got).max()) if ref.size else 0.0
    bound = 1e-4 * float(np.abs(ref).max()) if ref.size else 0.0
    if worst is not None and err >= worst[0]:
        worst[:] = [err, bound]
    return err <= max(bound, 1e-6), "max error %.3g (bound %.3g)" % (err, bound)


def save_module(name, mode, make, specs):
    path = os.path.join(OUT, "%s_%s.%s" % (name, mode, "pt2" if mode == "exported" else "pt"))
    meta_path = path + ".json"
    if fresh(path) and fresh(meta_path):
        with open(meta_path) as f:
            return path, json.load(f)
    if mode.endswith("113"):
        return save_module_113(name, mode[:-3], make, specs, path)
    if mode == "exported":
        return save_program(make, specs, path)
    torch.manual_seed(0)
    model = make().eval()
    example = make_inputs(specs, "shape", None, 1)
    with torch.no_grad():
        script = torch.jit.trace(model, tuple(example), check_trace=False) if mode == "traced" else torch.jit.script(model)
    tmp = path + ".tmp%d" % os.getpid()
    torch.jit.save(script, tmp)
    os.replace(tmp, path)
    # Sequences survive only torch.onnx.export's scripting path: give it the scripted module.
    exported = script if any(s.get("sequences") for s in specs) else model
    meta = {"torch_onnx_nodes": torch_onnx_nodes(exported, example, specs)}
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    mark_fresh(path)
    mark_fresh(meta_path)
    return path, meta


def save_module_113(name, mode, make, specs, path):
    """The same module saved by Debian's torch 1.13 (/usr/bin/python3), an older TorchScript generation."""
    shapes = [s["shape"] for s in specs]
    tmp = path + ".tmp%d" % os.getpid()
    code = "import sys; sys.path.insert(0, %r); import op_modules; op_modules.save_113(%r, %r, %r, %r)" % (
        HERE, make.__name__, mode, tmp, shapes)
    r = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("torch 1.13 could not save %s %s: %s" % (name, mode, r.stderr.strip()[-600:]))
    os.replace(tmp, path)
    meta = {"torch_onnx_nodes": "n/a (made by torch 1.13)"}
    with open(path + ".json", "w") as f:
        json.dump(meta, f)
    mark_fresh(path)
    mark_fresh(path + ".json")
    return path, meta


def save_program(make, specs, path):
    """The module as a torch.export program (.pt2), its "dynamic" dims as torch.export.Dim (shared by name)."""
    torch.manual_seed(0)
    model = make().eval()
    example = make_inputs(specs, "shape", None, 1)
    dims = {}
    dynamic = tuple({int(axis): dims.setdefault(sym, torch.export.Dim(sym, min=2, max=64))
                     for axis, sym in s.get("dynamic", {}).items()} or None for s in specs)
    program = torch.export.export(model, tuple(example), dynamic_shapes=dynamic)
    tmp = path + ".tmp%d.pt2" % os.getpid()
    torch.export.save(program, tmp)
    os.replace(tmp, path)
    meta = {"torch_onnx_nodes": "n/a (a torch.export program)"}
    with open(path + ".json", "w") as f:
        json.dump(meta, f)
    mark_fresh(path)
    mark_fresh(path + ".json")
    return path, meta


def torch_onnx_nodes(model, example, specs):
    """Nodes (subgraphs included) in torch.onnx.export's file of the same module, or an error."""
    names = [s["name"] for s in specs]
    dynamic = {s["name"]: {int(k): v for k, v in s.get("dynamic", {}).items()} for s in specs if "dynamic" in s}
    f = io.BytesIO()
    # The exporter prints graphs on failure: keep them out of the TAP stream.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    try:
        if True:  # with gradients on, as users export: no_grad would take torch's fused fast paths
            torch.onnx.export(model, tuple(example), f, dynamo=False, opset_version=17, input_names=names,
                              dynamic_axes=dynamic, do_constant_folding=True)
    except Exception as e:  # noqa: BLE001 - any exporter failure is reported as such
        return "failed (%s)" % " ".join(str(e).split())[:160]
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return count_nodes(onnx.load_from_string(f.getvalue()).graph)


def count_nodes(graph):
    n = 0
    for node in graph.node:
        n += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                n += count_nodes(attr.g)
    return n


def graft_run(graft_cli, model_path, feeds, workdir):
    args = [graft_cli, "run", model_path, "-o", os.path.join(workdir, "out")]
    for name, value in feeds.items():
        p = os.path.join(workdir, name + ".npy")
        np.save(p, value)
        args += ["--input", "%s=%s" % (name, p)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("graft-cli run: " + r.stderr.strip())
    return os.path.join(workdir, "out")


def run_case(graft_cli, name, mode, make, specs, torchvision, workdir):
    notes = []
    path, meta = save_module(name, mode, make, specs)
    onnx_path = os.path.join(workdir, "%s_%s.onnx" % (name, mode))
    args = [graft_cli, "convert", path, "-o", onnx_path]
    opset = next((s["opset"] for s in specs if "opset" in s), None)
    if opset:
        args += ["--opset", str(opset)]
    for s in specs:
        if "shape" in s and mode != "exported":  # a program declares its own shapes and dynamic dims
            args += ["--shape", "%s=%s" % (s["name"], "x".join(str(d) for d in s["shape"]))]
            for axis, sym in s.get("dynamic", {}).items():
                args += ["--dynamic", "%s:%s=%s" % (s["name"], axis, sym)]
    start = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        return False, ["convert failed: " + r.stderr.strip()[:2000]]
    model = onnx.load(onnx_path)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    nodes = count_nodes(model.graph)
    if opset:
        got = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        ok_opset = got == opset and not any(n.op_type == "LayerNormalization" for n in model.graph.node)
        if not ok_opset:
            return False, ["opset %d asked, file has %d; ops %s" % (opset, got, sorted({n.op_type for n in model.graph.node}))]
    # a list stays a sequence carried through a real Loop, not unrolled for one trip count;
    # circular padding is Slice + Concat before opset 19 and Pad(wrap) from 19
    expected = [op for s in specs for op in s.get("expect_ops", [])]
    if any(s.get("sequences") for s in specs):
        expected += ["Loop", "SequenceInsert", "ConcatFromSequence"]
    absent = [op for s in specs for op in s.get("absent_ops", [])]
    if expected or absent:
        ops = count_ops(model.graph, expected + absent)
        notes.append("ops %s" % ops)
        if any(ops[op] == 0 for op in expected) or any(ops[op] for op in absent):
            return False, notes + ["expected ops %s, none of %s" % (expected, absent)]
        if any(s.get("opset") == 19 for s in specs):
            modes = {a.s.decode() for n in model.graph.node if n.op_type == "Pad" for a in n.attribute if a.name == "mode"}
            notes.append("Pad modes %s" % sorted(modes))
            if modes != {"wrap"}:
                return False, notes
    reference = meta["torch_onnx_nodes"]
    notes.append("converted in %.2f s (%s); %d nodes, torch.onnx.export %s"
                 % (seconds, r.stdout.strip().rpartition("(")[2].rstrip(")"), nodes, reference))
    ok = True
    if torchvision and isinstance(reference, int) and nodes > reference:
        ok = False
        notes.append("more nodes than torch.onnx.export")
    if name == "resnet18":
        # module groups survive as scopes in the node names
        scoped = [n.name for n in model.graph.node if n.name.startswith("/layer1/0/conv1/")]
        ok &= scoped == ["/layer1/0/conv1/Conv"]
        notes.append("layer1.0.conv1 nodes: %s" % scoped)

    script = torch.export.load(path).module() if mode == "exported" else torch.jit.load(path).eval()
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    worst = [0.0, 0.0]
    onnx_inputs = [i.name for i in session.get_inputs()]
    paths = next((s["paths"] for s in specs if "paths" in s), [None])
    shape_keys = ["shape"] + (["other"] if any("other" in s for s in specs) else [])
    for key in shape_keys:
        for branch in paths:
            values = make_inputs(specs, key, branch, 7)
            with torch.no_grad():
                refs = flatten(script(*values))
            feeds = {n: as_numpy(v) for n, v in zip(onnx_inputs, values)}
            outs = flatten_onnx(session.run(None, feeds))
            label = "%s%s" % (key, "/" + branch if branch else "")
            if any(s.get("sequences") for s in specs):
                lengths = [int(r) for r in refs if r.ndim == 0 and r.dtype == np.int64]
                notes.append("%s: list lengths %s" % (label, lengths))
            if len(outs) != len(refs):
                return False, notes + ["%s: %d outputs, PyTorch has %d" % (label, len(outs), len(refs))]
            for i, (ref, got) in enumerate(zip(refs, outs)):
                good, how = close(ref, got, worst)
                ok &= good
                if not good or i == 0:
                    notes.append("onnxruntime %s output %d: %s" % (label, i, how))
            if key == "shape" or not torchvision:
                out_dir = graft_run(graft_cli, onnx_path, feeds, tempfile.mkdtemp(dir=workdir))
                files = sorted(os.listdir(out_dir))
                graft_outs = []
                for out in session.get_outputs():
                    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in out.name)
                    if out.type.startswith("seq(") and safe in files:
                        # a sequence: DIR/<name>/<index>.npy
                        items = os.listdir(os.path.join(out_dir, safe))
                        graft_outs += [np.load(os.path.join(out_dir, safe, "%d.npy" % k)) for k in range(len(items))]
                    elif safe + ".npy" in files:
                        graft_outs.append(np.load(os.path.join(out_dir, safe + ".npy")))
                    else:
                        ok = False
                        notes.append("graft run: no output %s" % out.name)
                if len(graft_outs) != len(refs):
                    return False, notes + ["graft runtime %s: %d outputs, PyTorch has %d" % (label, len(graft_outs), len(refs))]
                for i, got in enumerate(graft_outs):
                    good, how = close(refs[i], got, worst)
                    ok &= good
                    if not good or i == 0:
                        notes.append("graft runtime %s output %d: %s" % (label, i, how))
    notes.append("worst error over all outputs, sizes and runtimes: %.2g (bound %.2g)" % tuple(worst))
    return ok, notes


def exported_pt2(name, make, example, dynamic_shapes):
    """A torch.export archive of the module, made again when the module definitions change."""
    pt2 = os.path.join(OUT, name + "_exported.pt2")
    if not fresh(pt2):
        torch.manual_seed(0)
        program = torch.export.export(make().eval(), example, dynamic_shapes=dynamic_shapes)
        torch.export.save(program, pt2 + ".tmp.pt2")
        os.replace(pt2 + ".tmp.pt2", pt2)
        mark_fresh(pt2)
    return pt2


def convert_pt2_checked(graft_cli, pt2, workdir, input_dims, feeds_list):
    """Converts a .pt2; the file must pass the checker and strict inference, have these input dims, and
    give the program's first output in onnxruntime and Graft's runtime at each of feeds_list."""
    converted = os.path.join(workdir, os.path.basename(pt2) + ".onnx")
    run = cli(graft_cli, "convert", pt2, "-o", converted)
    notes = [run.stdout.strip() or run.stderr.strip()]
    if run.returncode != 0:
        return False, notes
    model = onnx.load(converted)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input]
    ok = dims == input_dims
    notes.append("input dims %s" % dims)
    session = ort.InferenceSession(converted, providers=["CPUExecutionProvider"])
    program = torch.export.load(pt2).module()
    for feeds in feeds_list:
        with torch.no_grad():
            ref = program(*feeds.values()).numpy()
        arrays = {k: v.numpy() for k, v in feeds.items()}
        sizes = ", ".join("%s %s" % (k, "×".join(map(str, v.shape))) for k, v in arrays.items())
        good, how = close(ref, session.run(None, arrays)[0])
        ok &= good
        notes.append("onnxruntime at %s: %s" % (sizes, how))
        out_dir = graft_run(graft_cli, converted, arrays, tempfile.mkdtemp(dir=workdir))
        good, how = close(ref, np.load(os.path.join(out_dir, os.listdir(out_dir)[0])))
        ok &= good
        notes.append("graft runtime at %s: %s" % (sizes, how))
    return ok, notes


def cli(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


def cli_cases(graft_cli, workdir):
    """What cannot be lowered is named; edit takes TorchScript. (name, ok, notes) per check."""
    path, _ = save_module("unsupported", "traced", op_modules.Unsupported, [{"name": "x", "shape": [2, 5]}])
    onnx_path = os.path.join(workdir, "unsupported.onnx")
    lint = cli(graft_cli, "lint", path, "--target", "onnx:17")
    yield ("lint --target onnx names aten::logical_xor", lint.returncode == 1 and "[unsupported-op]" in lint.stdout
           and "aten::logical_xor" in lint.stdout, [lint.stdout.strip()[-400:]])
    refused = cli(graft_cli, "convert", path, "-o", onnx_path, "--shape", "x=2x5")
    yield ("convert fails listing aten::logical_xor", refused.returncode == 1 and "aten::logical_xor" in refused.stderr
           and not os.path.exists(onnx_path), [refused.stderr.strip()[:400]])
    custom = cli(graft_cli, "convert", path, "-o", onnx_path, "--shape", "x=2x5", "--dynamic", "x:0=batch",
                 "--allow-custom")
    notes = [custom.stdout.strip() or custom.stderr.strip()]
    ok = custom.returncode == 0
    if ok:
        model = onnx.load(onnx_path)
        domains = {n.domain for n in model.graph.node}
        ok = "aten" in domains
        x = torch.randn(3, 5)
        ref = torch.jit.load(path)(x).numpy()
        out_dir = graft_run(graft_cli, onnx_path, {"x": x.numpy()}, tempfile.mkdtemp(dir=workdir))
        got = np.load(os.path.join(out_dir, os.listdir(out_dir)[0]))
        good, how = close(ref, got)
        ok &= good
        notes.append("domains %s; graft runtime at batch 3: %s" % (sorted(domains), how))
    yield ("convert --allow-custom writes an aten-domain node Graft runs", ok, notes)

    # A lowering that refuses its arguments names the op the same way, with its reason.
    path, _ = save_module("circular_pad_to_multiple", "traced", op_modules.CircularPadToMultiple,
                          [{"name": "x", "shape": [1, 2, 5, 6]}])
    lint = cli(graft_cli, "lint", path, "--target", "onnx:17")
    refused = cli(graft_cli, "convert", path, "-o", onnx_path, "--shape", "x=1x2x5x6")
    custom = cli(graft_cli, "convert", path, "-o", onnx_path, "--shape", "x=1x2x5x6", "--dynamic", "x:0=batch",
                 "--allow-custom")
    ok = (lint.returncode == 1 and "[unsupported-op]" in lint.stdout and "aten::pad" in lint.stdout
          and "circular" in lint.stdout and refused.returncode == 1 and "circular" in refused.stderr
          and custom.returncode == 0)
    notes = [lint.stdout.strip()[-400:], refused.stderr.strip()[:400]]
    if ok:
        # Graft's runtime has no circular mode for aten::pad either: only the file is checked.
        nodes = [(n.domain, n.op_type) for n in onnx.load(onnx_path).graph.node]
        ok = ("aten", "pad") in nodes
        notes.append("--allow-custom wrote %s" % nodes)
    else:
        notes.append(custom.stderr.strip()[:400])
    yield ("a pad mode without an ONNX form is named by lint and convert, written as aten::pad by --allow-custom",
           ok, notes)

    # A torch.export program (.pt2) with a dynamic batch: its shapes come from the program.
    pt2 = os.path.join(OUT, "tuple_return_exported.pt2")
    torch.manual_seed(0)
    module = TupleReturn().eval()
    if not fresh(pt2):
        batch = torch.export.Dim("batch", min=2, max=64)
        program = torch.export.export(module, (torch.randn(2, 3, 8, 8),), dynamic_shapes={"x": {0: batch}})
        torch.export.save(program, pt2 + ".tmp.pt2")
        os.replace(pt2 + ".tmp.pt2", pt2)
        mark_fresh(pt2)
    converted = os.path.join(workdir, "exported.onnx")
    run = cli(graft_cli, "convert", pt2, "-o", converted)
    ok = run.returncode == 0
    notes = [run.stdout.strip() or run.stderr.strip()]
    if ok:
        model = onnx.load(converted)
        onnx.checker.check_model(model, full_check=True)
        session = ort.InferenceSession(converted, providers=["CPUExecutionProvider"])
        program = torch.export.load(pt2).module()
        for batch in (2, 5):
            x = torch.randn(batch, 3, 8, 8)
            with torch.no_grad():
                refs = flatten(program(x))
            outs = session.run(None, {session.get_inputs()[0].name: x.numpy()})
            for i, (ref, got) in enumerate(zip(refs, outs)):
                good, how = close(ref, got)
                ok &= good
                notes.append("batch %d output %d: %s" % (batch, i, how))
    yield ("convert a torch.export .pt2 with a dynamic batch", ok, notes)

    # Sizes read with sym_size stay Shape → Gather: the batch stays symbolic through reshapes. The
    # archive keeps torch.export's symbol (s77), not the Dim's name: the file names it after the input.
    batch = torch.export.Dim("batch", min=2, max=64)
    pt2 = exported_pt2("sym_sizes", op_modules.SymSizes, (torch.randn(3, 3, 4),), {"x": {0: batch}})
    ok, notes = convert_pt2_checked(graft_cli, pt2, workdir, [["x_dim0", 3, 4]],
                                    [{"x": torch.randn(b, 3, 4)} for b in (3, 7)])
    yield ("convert a .pt2 whose sizes come from sym_size, batch kept symbolic", ok, notes)

    # Inputs sharing a dynamic dim share its name in the file; each other dynamic dim is named after its input.
    n = torch.export.Dim("n", min=2, max=64)
    pt2 = exported_pt2("shared_dims", op_modules.SharedDims, (torch.randn(3, 3, 4), torch.randn(3, 5)),
                       {"x": {0: batch}, "y": {0: batch, 1: n}})
    ok, notes = convert_pt2_checked(graft_cli, pt2, workdir, [["x_dim0", 3, 4], ["x_dim0", "y_dim1"]],
                                    [{"x": torch.randn(b, 3, 4), "y": torch.randn(b, w)} for b, w in ((3, 5), (6, 2))])
    yield ("a .pt2's dynamic dims are named after the inputs, shared where torch.export shares them", ok, notes)

    path, _ = save_module("resnet18", "traced", vision_models.resnet18, [IMAGE])
    edited = os.path.join(workdir, "resnet18-head.onnx")
    edit = cli(graft_cli, "edit", path, "-o", edited, "--shape", "x=1x3x224x224", "--dynamic", "x:0=batch",
               "--extract", "x:/layer1/1/relu_1/Relu_output_0")
    ok = edit.returncode == 0
    notes = [edit.stdout.strip() or edit.stderr.strip()]
    if ok:
        model = onnx.load(edited)
        onnx.checker.check_model(model, full_check=True)
        dims = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        ok = dims == ["batch", 3, 224, 224] and model.graph.output[0].name == "/layer1/1/relu_1/Relu_output_0"
        notes.append("input %s, %d nodes" % (dims, len(model.graph.node)))
    yield ("edit converts TorchScript and extracts /layer1/1", ok, notes)

    # Without --shape: the input's rank comes from the convolution reading it, every dim stays symbolic.
    path, _ = save_module("resnet18", "scripted", vision_models.resnet18, [IMAGE])
    converted = os.path.join(workdir, "resnet18-any-size.onnx")
    run = cli(graft_cli, "convert", path, "-o", converted)
    ok = run.returncode == 0
    notes = [run.stdout.strip() or run.stderr.strip()]
    if ok:
        model = onnx.load(converted)
        onnx.checker.check_model(model, full_check=True)
        dims = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        session = ort.InferenceSession(converted, providers=["CPUExecutionProvider"])
        x = torch.randn(3, 3, 200, 160)
        with torch.no_grad():
            ref = torch.jit.load(path)(x).numpy()
        good, how = close(ref, session.run(None, {"x": x.numpy()})[0])
        ok = good and dims == ["x_dim0", "x_dim1", "x_dim2", "x_dim3"]
        notes.append("input %s; onnxruntime at 3×3×200×160: %s" % (dims, how))
    yield ("convert without --shape keeps every dim of a CNN symbolic", ok, notes)


def main():
    graft_cli = sys.argv[1]
    only = set(sys.argv[2:])
    os.makedirs(OUT, exist_ok=True)
    todo = [(c, mode) for c in CASES for mode in c[2] if not only or c[0] in only or "%s_%s" % (c[0], mode) in only]
    n_cli = 0 if only and "cli" not in only else 9
    print("1..%d" % (len(todo) + n_cli), flush=True)
    failed = 0
    with tempfile.TemporaryDirectory() as workdir:
        for n, (name, ok, notes) in enumerate(cli_cases(graft_cli, workdir) if n_cli else [], 1):
            failed += not ok
            print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
            for note in notes:
                print("# " + note.replace("\n", "\n# "))
            sys.stdout.flush()
        for n, ((name, make, _, specs, torchvision), mode) in enumerate(todo, n_cli + 1):
            try:
                ok, notes = run_case(graft_cli, name, mode, make, specs, torchvision, workdir)
            except Exception as e:  # noqa: BLE001 - reported as the case's failure
                ok, notes = False, ["%s: %s" % (type(e).__name__, str(e)[:2000]), traceback.format_exc()[-1500:]]
            failed += not ok
            print("%s %d - %s %s" % ("ok" if ok else "not ok", n, name, mode))
            for note in notes:
                print("# " + note.replace("\n", "\n# "))
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
