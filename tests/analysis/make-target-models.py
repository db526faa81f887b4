#!/usr/bin/env python3
"""Real exports and what the real tools say about them, for the deployment
target tests (tests/analysis/check-deploy-targets.py).

Usage: make-target-models.py OUTDIR [NAME...]

For each model (random weights, built from constructors and configs;
nothing is downloaded) OUTDIR/NAME/ gets:
  model.onnx       the export (torch.onnx.export, TorchScript-based or dynamo)
  optimized.onnx   that model optimized by onnxruntime at the BASIC level,
                   exactly as check_onnx_model_mobile_usability optimizes it
                   before it checks (its optimize_model(), the same
                   arguments; initializers in external_data.pb)
  reference.json   {"ort": {TARGET: REPORT}, "openvino": {...}}
    ort: what onnxruntime's usability checker (analyze_model, which
      `python -m onnxruntime.tools.check_onnx_model_mobile_usability` calls)
      logs at debug level for optimized.onnx, told not to optimize it, first
      pass (the model as it is), per execution provider: partitions,
      supported, total, sizes, unsupported_ops ("onnx::Erf"), groups (node
      names per partition). The same command on model.onnx (letting it
      optimize) must print the same figures: that proves optimized.onnx is
      the model it checked.
    openvino: openvino's ONNX frontend converting model.onnx partially:
      the ONNX nodes it has no conversion for (ONNXFrameworkNode), and
      whether Core().query_model(model, "CPU") on the converted model
      covers every operation.
Existing outputs are kept while STAMP is unchanged (the cache).
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
STAMP = 5
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fixtures"))

import torch  # noqa: E402

EPS = {"NNAPI": "ort-nnapi", "CoreML NeuralNetwork": "ort-coreml", "CoreML MLProgram": "ort-coreml-mlprogram"}


def import_transformers():
    """transformers imports torchvision, whose CUDA build's fake-op
    registrations fail beside the CPU torch: import it with
    torch.library.register_fake disabled first (its models are plain Python)."""
    original = torch.library.register_fake

    def no_fake(op, func=None, *args, **kwargs):
        return (lambda f: f) if func is None else None
    torch.library.register_fake = no_fake
    try:
        import torchvision  # noqa: F401
    except Exception:
        pass
    finally:
        torch.library.register_fake = original
    import transformers
    return transformers


class Hidden(torch.nn.Module):
    """A transformers model's last hidden state, called by keyword. Token
    models get an all-ones mask, which keeps transformers away from its
    packed-sequence check (torch.diff, which opset 17 lacks)."""

    def __init__(self, model, key):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, x):
        extra = {"attention_mask": torch.ones_like(x)} if self.key == "input_ids" else {}
        return self.model(**{self.key: x}, **extra, return_dict=False)[0]


def vision(name):
    import vision_models
    return getattr(vision_models, name)(), torch.randn(1, 3, 224, 224)


def bert():
    t = import_transformers()
    config = t.BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=128, max_position_embeddings=64)
    return Hidden(t.BertModel(config, add_pooling_layer=False), "input_ids"), torch.randint(1, 1000, (1, 16))


def gpt2():
    t = import_transformers()
    config = t.GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=64, use_cache=False)
    return Hidden(t.GPT2Model(config), "input_ids"), torch.randint(1, 1000, (1, 16))


def vit():
    t = import_transformers()
    config = t.ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=128)
    return Hidden(t.ViTModel(config, add_pooling_layer=False), "pixel_values"), torch.randn(1, 3, 32, 32)


# name: (builder, dynamo, dynamic batch)
MODELS = {
    "resnet18": (lambda: vision("resnet18"), False, False),
    "resnet18_dynamic": (lambda: vision("resnet18"), False, True),
    "resnet18_dynamo": (lambda: vision("resnet18"), True, False),
    "mobilenet_v2": (lambda: vision("mobilenet_v2"), False, False),
    "mobilenet_v2_dynamo": (lambda: vision("mobilenet_v2"), True, False),
    "bert": (bert, False, False),
    "bert_dynamic": (bert, False, True),
    "bert_dynamo": (bert, True, False),
    "gpt2": (gpt2, False, False),
    "gpt2_dynamo": (gpt2, True, False),
    "vit": (vit, False, False),
}


def export(name, path):
    build, dynamo, dynamic = MODELS[name]
    model, example = build()
    model.eval()
    kwargs = {}
    if dynamic:
        if dynamo:
            kwargs["dynamic_shapes"] = ({0: torch.export.Dim("batch")},)
        else:
            kwargs["dynamic_axes"] = {"x": {0: "batch"}, "y": {0: "batch"}}
    # The dynamo exporter writes opset 18 (converted down to 17, GPT-2's
    # Split keeps an attribute opset 17 lacks).
    with torch.no_grad():
        torch.onnx.export(model, (example,), str(path), input_names=["x"], output_names=["y"],
                          opset_version=18 if dynamo else 17, dynamo=dynamo, **kwargs)


def run_checker(model, workdir):
    """The command users run (it optimizes the model first)."""
    args = [sys.executable, "-m", "onnxruntime.tools.check_onnx_model_mobile_usability", "--log_level", "debug"]
    out = subprocess.run(args + [str(model)], capture_output=True, text=True, cwd=workdir, check=True)
    return out.stdout + out.stderr


def run_checker_skipping_optimization(model):
    """The function that command calls, told the model is optimized already."""
    import io
    import logging
    from onnxruntime.tools.mobile_helpers import usability_checker
    stream = io.StringIO()
    logger = logging.getLogger("make-target-models")
    logger.handlers = [logging.StreamHandler(stream)]
    logger.handlers[0].setFormatter(logging.Formatter("%(levelname)s:  %(message)s"))
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    usability_checker.analyze_model(pathlib.Path(model), skip_optimize=True, logger=logger)
    return stream.getvalue()


def parse_checker(text):
    """The first pass of each EP's section: the model as it is."""
    reports = {}
    sections = re.split(r"Checking (NNAPI|CoreML NeuralNetwork|CoreML MLProgram)\n", text)
    for ep, body in zip(sections[1::2], sections[2::2]):
        first = body.split("--------")[0].split("================")[0]
        m = re.search(r"(\d+) partitions with a total of (\d+)/(\d+) nodes", first)
        sizes = re.search(r"Partition sizes: \[([\d, ]*)\]", first)
        ops = re.search(r"Unsupported ops: (.*)", first)
        groups = [[entry.split(":", 1)[1] for entry in line.split(",")]
                  for line in re.findall(r"Nodes in group: (.*)", first)]
        reports[EPS[ep]] = {
            "partitions": int(m.group(1)), "supported": int(m.group(2)), "total": int(m.group(3)),
            "sizes": [int(s) for s in sizes.group(1).split(",")] if sizes and sizes.group(1) else [],
            "unsupported_ops": sorted("onnx::" + o.split(":", 1)[1] if o.startswith("ai.onnx:")
                                      else o.replace(":", "::") for o in ops.group(1).split(",")) if ops else [],
            "groups": groups,
            "dynamic_input_nodes": int(re.search(r"dynamic shape=(\d+)", first).group(1))
            if "dynamic shape=" in first else 0,
        }
    return reports


def openvino_reference(model_path):
    import openvino as ov
    from openvino.frontend import FrontEndManager
    import onnx
    frontend = FrontEndManager().load_by_framework("onnx")
    converted = frontend.convert_partially(frontend.load(str(model_path)))
    unconverted = [op.get_friendly_name() for op in converted.get_ops() if op.get_type_name() == "ONNXFrameworkNode"]
    nodes = {n.name: n for n in onnx.load(str(model_path), load_external_data=False).graph.node}
    query = ov.Core().query_model(converted, "CPU")
    operations = [op.get_friendly_name() for op in converted.get_ops()]
    return {
        "unsupported_nodes": sorted(unconverted),
        "unsupported_ops": sorted({"onnx::" + nodes[n].op_type if not nodes[n].domain
                                   else nodes[n].domain + "::" + nodes[n].op_type for n in unconverted if n in nodes}),
        "operations": len(operations),
        "query_supported": sum(1 for n in operations if n in query),
        "query_covers_all": all(n in query for n in operations),
        "version": ov.__version__,
    }


def make(name, outdir):
    from onnxruntime.tools.onnx_model_utils import optimize_model
    import onnxruntime
    folder = outdir / name
    stamp = folder / "reference.json"
    if stamp.exists() and json.loads(stamp.read_text()).get("stamp") == STAMP:
        return
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=name + "-", dir=outdir))
    try:
        export(name, tmp / "model.onnx")
        # As the usability checker does (use_external_initializers=True).
        optimize_model(tmp / "model.onnx", tmp / "optimized.onnx", use_external_initializers=True)
        with tempfile.TemporaryDirectory() as work:
            checked = parse_checker(run_checker_skipping_optimization(tmp / "optimized.onnx"))
            optimized_by_tool = parse_checker(run_checker(tmp / "model.onnx", work))
        for target in checked:
            a, b = checked[target], optimized_by_tool[target]
            if (a["partitions"], a["supported"], a["total"], a["unsupported_ops"]) != \
               (b["partitions"], b["supported"], b["total"], b["unsupported_ops"]):
                raise SystemExit(f"{name}: the checker's figures on optimized.onnx and on model.onnx differ "
                                 f"for {target}: {a} vs {b}")
        reference = {"stamp": STAMP, "onnxruntime": onnxruntime.__version__, "ort": checked,
                     "openvino": openvino_reference(tmp / "model.onnx")}
        (tmp / "reference.json").write_text(json.dumps(reference, indent=1))
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    outdir = pathlib.Path(sys.argv[1]).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    names = sys.argv[2:] or list(MODELS)
    for name in names:
        if name not in MODELS:
            raise SystemExit(f"unknown model {name}; known: {', '.join(MODELS)}")
        make(name, outdir)


if __name__ == "__main__":
    main()
