#!/usr/bin/env python3
"""Makes the zoo's files: every artifact PyTorch 2.13 can make of each model.

    tests/python tests/zoo/make-zoo.py [--fast] [--jobs N] [MODEL...]

For each model of tests/zoo/models.py, into tests/fixtures-generated/zoo/MODEL/:
  traced.pt      torch.jit.trace
  scripted.pt    torch.jit.script
  ts.onnx        torch.onnx.export(dynamo=False), static shapes, opset 17
  exported.pt2   torch.export.export, the batch dim dynamic where torch accepts it
  dynamo.onnx    torch.onnx.export of that program (dynamo=True)
  inputs-bN/K.npy, outputs-bN/K.npy   the example inputs and eager PyTorch's
                 outputs (flattened to tensors) at the export batch and another
  manifest.json  per artifact: made or PyTorch's own error, seconds, PyTorch's op
                 histogram of the file (inlined_graph for TorchScript, the program's
                 call_function targets for .pt2, node types for ONNX)
A model's files are made again when models.py, this script or a library
version changes (MODEL/digest). Each model is made in a child process with a
time limit, so one that hangs or crashes PyTorch costs only its own row.
"""
import argparse
import collections
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("GRAFT_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
OUT = os.path.join(SOURCE, "tests", "fixtures-generated", "zoo")
MODEL_SECONDS = 1800
ARTIFACTS = ["traced.pt", "scripted.pt", "ts.onnx", "exported.pt2", "dynamo.onnx"]


def library_versions():
    from importlib import metadata
    names = ["torch", "torchvision", "timm", "transformers", "ultralytics", "segment-anything", "diffusers",
             "onnx", "onnxscript"]
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def digest():
    h = hashlib.sha256()
    for path in (os.path.join(HERE, "models.py"), os.path.abspath(__file__)):
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(json.dumps(library_versions(), sort_keys=True).encode())
    return h.hexdigest()[:16]


def fresh(name, want):
    folder = os.path.join(OUT, name)
    try:
        with open(os.path.join(folder, "digest")) as f:
            return f.read() == want and os.path.exists(os.path.join(folder, "manifest.json"))
    except OSError:
        return False


# ------------------------------------------------------------------ one model (child process)

def flatten(value):
    import torch
    if torch.is_tensor(value):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flatten(v)]
    return []


def first_line(error):
    text = "%s: %s" % (type(error).__name__, str(error).strip())
    lines = [l for l in text.splitlines() if l.strip()]
    return " ".join(lines[:3])[:600]


def torchscript_ops(module):
    """The aten ops of the inlined forward graph, inside If/Loop blocks too (as graft-cli info counts them)."""
    counts = collections.Counter()

    def walk(block):
        for node in block.nodes():
            if node.kind().startswith("aten::"):
                counts[node.kind()] += 1
            for sub in node.blocks():
                walk(sub)
    walk(module.inlined_graph)
    return dict(counts)


def program_ops(program):
    counts = collections.Counter()
    for node in program.graph.nodes:
        if node.op == "call_function":
            counts[str(node.target)] += 1
    return dict(counts)


def onnx_ops(path):
    import onnx
    model = onnx.load(path, load_external_data=False)
    return dict(collections.Counter(n.op_type for n in model.graph.node))


def make_model(name, folder):
    import numpy as np
    import torch
    sys.path.insert(0, HERE)
    import models

    manifest = {"model": name, "family": models.BY_NAME[name].family, "artifacts": {}}
    entry = models.BY_NAME[name]
    model = models.load(name)
    example = models.inputs(name, models.EXPORT_BATCH)
    other = models.inputs(name, models.OTHER_BATCH)
    manifest["export_batch"] = models.EXPORT_BATCH
    manifest["other_batch"] = models.OTHER_BATCH
    manifest["inputs"] = [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")} for t in example]
    for batch, values in ((models.EXPORT_BATCH, example), (models.OTHER_BATCH, other)):
        with torch.no_grad():
            outputs = flatten(model(*values))
        for kind, tensors in (("inputs", values), ("outputs", outputs)):
            sub = os.path.join(folder, "%s-b%d" % (kind, batch))
            os.makedirs(sub, exist_ok=True)
            for k, t in enumerate(tensors):
                np.save(os.path.join(sub, "%d.npy" % k), t.detach().numpy())
    manifest["outputs"] = len(outputs)

    def attempt(artifact, make):
        start = time.perf_counter()
        path = os.path.join(folder, artifact)
        record = {}
        try:
            with torch.no_grad():
                record.update(make(path) or {})
            record["made"] = True
        except Exception as e:  # PyTorch's own failure goes into the table
            record = {"made": False, "error": first_line(e)}
            if os.path.exists(path):
                os.remove(path)
        record["seconds"] = round(time.perf_counter() - start, 2)
        manifest["artifacts"][artifact] = record
        print("  %-13s %s (%.1f s)" % (artifact, "made" if record["made"] else record["error"][:160],
                                         record["seconds"]), flush=True)
        return record["made"]

    def traced(path):
        module = torch.jit.trace(model, example, check_trace=False, strict=False)
        module.save(path)
        return {"ops": torchscript_ops(torch.jit.load(path))}

    def scripted(path):
        module = torch.jit.script(model)
        module.save(path)
        return {"ops": torchscript_ops(torch.jit.load(path))}

    def ts_onnx(path):
        torch.onnx.export(model, example, path, dynamo=False, opset_version=17,
                          input_names=["input_%d" % i for i in range(len(example))])
        return {"ops": onnx_ops(path)}

    program = {}

    def exported(path):
        batch = torch.export.Dim("batch", min=1, max=64)
        dynamic = tuple({axis: batch for axis in entry.dynamic_axes.get(i, [])} or None for i in range(len(example)))
        # forward(x, ...) takes one spec per argument; forward(*args) one for the tuple
        variadic = any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(model.forward).parameters.values())
        record = {}
        try:
            program["ep"] = torch.export.export(model, example, dynamic_shapes=(dynamic,) if variadic else dynamic,
                                                strict=False)
            record["dynamic_batch"] = True
        except Exception as e:
            record["dynamic_batch_error"] = first_line(e)
            program["ep"] = torch.export.export(model, example, strict=False)
            record["dynamic_batch"] = False
        torch.export.save(program["ep"], path)
        record["ops"] = program_ops(torch.export.load(path))
        return record

    def dynamo_onnx(path):
        if "ep" not in program:
            raise RuntimeError("no torch.export program to export (torch.export failed)")
        onnx_program = torch.onnx.export(program["ep"], example, dynamo=True, optimize=True, verbose=False)
        onnx_program.save(path)
        return {"ops": onnx_ops(path)}

    for artifact, make in (("traced.pt", traced), ("scripted.pt", scripted), ("ts.onnx", ts_onnx),
                           ("exported.pt2", exported), ("dynamo.onnx", dynamo_onnx)):
        if artifact in entry.skip:
            manifest["artifacts"][artifact] = {"made": False, "error": "skipped: " + entry.skip[artifact]}
            continue
        attempt(artifact, make)
    check_files(manifest, folder, example, other)
    return manifest


def max_error(refs, outs):
    """None when the outputs match within 1e-4·max|ref| (the zoo's bound), else what differs first.
    A NaN or Inf where the reference has a number is a difference. run-zoo.py uses it too."""
    import numpy as np
    if len(refs) != len(outs):
        return "%d outputs, PyTorch has %d" % (len(outs), len(refs))
    for k, (ref, out) in enumerate(zip(refs, outs)):
        ref = np.asarray(ref, dtype=np.float64)
        out = np.asarray(out, dtype=np.float64)
        if ref.shape != out.shape:
            return "output %d has shape %s, PyTorch %s" % (k, "×".join(map(str, out.shape)) or "scalar",
                                                           "×".join(map(str, ref.shape)) or "scalar")
        if ref.size:
            err = float(np.abs(ref - out).max())
            bound = max(1e-4 * float(np.abs(ref).max()), 1e-6)
            if not err <= bound:
                return "output %d differs by %.3g (bound %.3g)" % (k, err, bound)
    return None


def check_files(manifest, folder, example, other):
    """How each file behaves in its own consumer at the other batch (torch.jit.load,
    torch.export.load, onnxruntime) against eager PyTorch: a file that does not
    reproduce the model there (a traced size, a static export) is not run there."""
    import numpy as np
    import torch
    eager = {}
    for batch in (manifest["export_batch"], manifest["other_batch"]):
        sub = os.path.join(folder, "outputs-b%d" % batch)
        eager[batch] = [np.load(os.path.join(sub, "%d.npy" % k)) for k in range(manifest["outputs"])]
    traced_script = {}
    for artifact, record in manifest["artifacts"].items():
        if not record.get("made"):
            continue
        path = os.path.join(folder, artifact)
        for batch, values in ((manifest["export_batch"], example), (manifest["other_batch"], other)):
            key = "batch_%d" % batch
            try:
                with torch.no_grad():
                    if artifact.endswith(".pt"):
                        outs = [t.numpy() for t in flatten(torch.jit.load(path)(*values))]
                    elif artifact.endswith(".pt2"):
                        outs = [t.numpy() for t in flatten(torch.export.load(path).module()(*values))]
                    else:
                        import onnxruntime as ort
                        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                        feeds = {i.name: v.numpy() for i, v in zip(session.get_inputs(), values)}
                        outs = session.run(None, feeds)
                error = max_error(eager[batch], outs)
                record[key] = "agrees with eager PyTorch" if error is None else "differs from eager PyTorch: " + error
                if artifact in ("traced.pt", "scripted.pt") and batch == manifest["export_batch"]:
                    traced_script[artifact] = outs
            except Exception as e:
                record[key] = "fails: " + first_line(e)
    if len(traced_script) == 2:
        error = max_error(traced_script["traced.pt"], traced_script["scripted.pt"])
        manifest["trace_vs_script"] = "agree" if error is None else "differ: " + error


def child(name, folder):
    manifest = make_model(name, folder)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


# ------------------------------------------------------------------ driver

def make(name, want):
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    start = time.perf_counter()
    log_path = os.path.join(folder, "make.log")
    with open(log_path, "w") as log:
        try:
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, folder],
                               stdout=log, stderr=subprocess.STDOUT, timeout=MODEL_SECONDS)
            status = r.returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
    seconds = time.perf_counter() - start
    if status != 0 or not os.path.exists(os.path.join(folder, "manifest.json")):
        with open(log_path) as f:
            tail = f.read()[-1500:]
        manifest = {"model": name, "artifacts": {a: {"made": False, "error": "the model could not be built or "
                                                     "exported (%s): %s" % (status, tail.strip().splitlines()[-1:])}
                                                 for a in ARTIFACTS}, "outputs": 0}
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
    with open(os.path.join(folder, "digest"), "w") as f:
        f.write(want)
    return seconds


def selected(args):
    sys.path.insert(0, HERE)
    import models
    if args.models:
        unknown = [n for n in args.models if n not in models.BY_NAME]
        if unknown:
            sys.exit("make-zoo: no model named %s (see tests/zoo/models.py)" % ", ".join(unknown))
        return args.models
    return models.fast_subset() if args.fast else [m.name for m in models.ZOO]


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--fast", action="store_true", help="only the models make test uses")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    want = digest()
    names = [n for n in selected(args) if not fresh(n, want)]
    os.makedirs(OUT, exist_ok=True)
    print("make-zoo: %d models to make" % len(names), flush=True)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, seconds in zip(names, pool.map(lambda n: make(n, want), names)):
            with open(os.path.join(OUT, name, "manifest.json")) as f:
                manifest = json.load(f)
            made = [a for a, r in manifest["artifacts"].items() if r.get("made")]
            print("make-zoo: %-28s %5.1f s  %s" % (name, seconds, " ".join(made) or "nothing"), flush=True)


if __name__ == "__main__":
    main()
