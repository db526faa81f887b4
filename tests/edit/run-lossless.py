#!/usr/bin/env python3
"""Lossless save: Graft's load → save keeps every protobuf field.

Usage: run-lossless.py RESAVE_TOOL

Corpora (all generated or shipped, none checked in):
- the ONNX backend suite of the pinned onnx (node, simple and real cases,
  tests/onnx/make-backend-suite.py),
- the model folders the onnx wheel ships (onnx/backend/test/data/
  pytorch-converted, pytorch-operator, simple, light),
- PyTorch exports (TorchScript and dynamo exporters) made by
  tests/fixtures/make-onnx-models.py,
- fixtures that set every field Graft's IR has no place of its own for
  (make-lossless-fixtures.py: sparse initializers, TYPE_PROTO shapes,
  training_info, metadata_props and doc strings everywhere...).
resave-tool loads and saves each model unchanged; compare-onnx-fields.py
then compares every field of the two ModelProtos (its docstring lists the
only normalisations). Prints TAP, one case per corpus plus one for
onnx.checker on the saved fixtures.
"""
import glob
import os
import shutil
import subprocess
import sys

import onnx

from tap import plan, tap

SOURCE = os.environ["GRAFT_SOURCE_DIR"]
BUILD = os.environ["GRAFT_BUILD_DIR"]
HERE = os.path.join(SOURCE, "tests", "edit")
OUT = os.path.join(BUILD, "tests", "edit", "lossless-out")
TORCH_EXPORTS = ["resnet18", "transformer24", "resnet18_dynamo", "transformer24_dynamo"]


def corpora():
    suite = os.path.join(SOURCE, "tests", "fixtures-generated", "onnx-backend")
    subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "onnx", "make-backend-suite.py"), suite],
                   check=True, stdout=sys.stderr)
    with open(os.path.join(suite, "expected-counts.tsv")) as f:
        backend = [os.path.join(suite, line.split("\t")[0]) for line in f if line.strip()]

    wheel_data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    wheel = sorted(glob.glob(os.path.join(wheel_data, "*", "*", "model.onnx"))
                   + glob.glob(os.path.join(wheel_data, "light", "*.onnx")))

    models = os.path.join(SOURCE, "tests", "fixtures-generated", "models")
    subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "fixtures", "make-onnx-models.py"), models]
                   + TORCH_EXPORTS, check=True, stdout=sys.stderr)
    torch = [os.path.join(models, name + ".onnx") for name in TORCH_EXPORTS]

    fixtures_dir = os.path.join(OUT, "fixtures-made")
    made = subprocess.run([sys.executable, os.path.join(HERE, "make-lossless-fixtures.py"), fixtures_dir],
                          check=True, capture_output=True, text=True)
    fixtures = made.stdout.split()
    return [("ONNX backend suite", "backend", suite, backend),
            ("models shipped in the onnx wheel", "wheel", wheel_data, wheel),
            ("PyTorch exports", "torch", models, torch),
            ("fixtures setting every field", "fixtures", fixtures_dir, fixtures)]


def resave(tool, name, root, files):
    # A stale file in the output folder (an external-data file) must not
    # stand in for something the writer failed to embed.
    shutil.rmtree(os.path.join(OUT, name), ignore_errors=True)
    pairs = [(path, os.path.join(OUT, name, os.path.relpath(path, root))) for path in files]
    listfile = os.path.join(OUT, name + ".pairs")
    with open(listfile, "w") as f:
        f.writelines(f"{a}\t{b}\n" for a, b in pairs)
    result = subprocess.run([tool, listfile], capture_output=True, text=True)
    failed = [line for line in result.stdout.splitlines() if line.startswith("failed")]
    return listfile, pairs, failed


def compare(listfile):
    result = subprocess.run([sys.executable, os.path.join(HERE, "compare-onnx-fields.py"), listfile, "--summary"],
                            capture_output=True, text=True)
    lines = result.stdout.splitlines()
    differing = [line[len("not ok "):].split(" - ", 1)[1] for line in lines if line.startswith("not ok")]
    details = [line[2:] for line in lines if line.startswith("# ") and not line.startswith("# summary")]
    summary = [line[len("# summary "):] for line in lines if line.startswith("# summary")]
    return differing, details, summary, result


def main(tool):
    os.makedirs(OUT, exist_ok=True)
    fixture_pairs = []
    for title, name, root, files in corpora():
        listfile, pairs, failed = resave(tool, name, root, files)
        differing, details, summary, result = compare(listfile)
        saved = len(pairs) - len(failed)
        identical = len(pairs) - len(differing)
        tap(bool(files) and not failed and not differing and result.returncode == 0,
            f"{title}: {saved} of {len(pairs)} models saved, {identical} identical to the original field by field",
            "\n".join(failed + summary + details + ([result.stderr[-400:]] if result.returncode not in (0, 1) else [])))
        if name == "fixtures":
            fixture_pairs = pairs

    problems = []
    for original, saved in fixture_pairs:
        try:
            onnx.checker.check_model(onnx.load(original))
        except Exception:  # noqa: BLE001 - fixtures made for Graft only, not for the checker
            continue
        try:
            onnx.checker.check_model(onnx.load(saved), full_check=True)
        except Exception as e:  # noqa: BLE001
            problems.append(f"{saved}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    tap(bool(fixture_pairs) and not problems,
        "saved fixtures pass onnx.checker (full check) wherever the original passes", "\n".join(problems))
    edited_saves(tool, fixture_pairs[0][0])
    undone_saves(tool, [original for original, _ in fixture_pairs])
    plan()


def undone_saves(tool, originals):
    """An edit and its undo give back the graph's undo snapshot
    (graft_graph_copy): saving that must be as lossless as saving the
    loaded model."""
    listfile = os.path.join(OUT, "undone.pairs")
    shutil.rmtree(os.path.join(OUT, "undone"), ignore_errors=True)
    with open(listfile, "w") as f:
        f.writelines(f"{path}\t{os.path.join(OUT, 'undone', os.path.basename(path))}\n" for path in originals)
    result = subprocess.run([tool, "--operation", "make-dim-dynamic", "{'input': <'x'>, 'axis': <int64 0>, "
                             "'symbol': <'B'>}", "--undo", listfile], capture_output=True, text=True)
    differing, details, summary, compared = compare(listfile)
    tap(result.returncode == 0 and not differing and compared.returncode == 0,
        f"make-dim-dynamic then undo: {len(originals) - len(differing)} of {len(originals)} fixtures saved "
        f"identical field by field", "\n".join(result.stdout.splitlines() + summary + details))


def save_edited(tool, original, name, operation, params):
    saved = os.path.join(OUT, "edited", name)
    listfile = os.path.join(OUT, name + ".pairs")
    with open(listfile, "w") as f:
        f.write(f"{original}\t{saved}\n")
    result = subprocess.run([tool, "--operation", operation, params, listfile], capture_output=True, text=True)
    if result.returncode != 0:
        return None, result.stdout + result.stderr
    return saved, ""


def edited_saves(tool, everything):
    """After an edit, what it did not touch is kept; what it replaced is
    written from the IR (an edited sparse initializer becomes dense)."""
    a = onnx.load(everything)
    saved, why = save_edited(tool, everything, "values.onnx", "set-initializer-values",
                             "{'value': <'S'>, 'values': <'[1, 2, 3, 4, 5, 6]'>}")
    problems = [why] if saved is None else []
    if saved is not None:
        b = onnx.load(saved)
        dense = {t.name: onnx.numpy_helper.to_array(t).tolist() for t in b.graph.initializer}
        if dense.get("S") != [[1, 2, 3], [4, 5, 6]]:
            problems.append(f"S is not dense with the new values: {dense.get('S')}")
        if [t.values.name for t in b.graph.sparse_initializer] != ["S_linear"]:
            problems.append(f"sparse initializers {[t.values.name for t in b.graph.sparse_initializer]} != ['S_linear']")
        elif b.graph.sparse_initializer[0] != a.graph.sparse_initializer[1]:
            problems.append("the untouched sparse initializer S_linear changed")
        for field in ("training_info", "functions", "metadata_props"):
            if list(getattr(a, field)) != list(getattr(b, field)):
                problems.append(f"{field} changed")
        if list(a.graph.node) != list(b.graph.node) or a.graph.quantization_annotation != b.graph.quantization_annotation:
            problems.append("nodes or quantization annotations changed")
    tap(not problems, "set-initializer-values on a sparse initializer: it is saved dense with its new values, "
        "the other sparse initializer, training_info, functions and nodes are kept", "\n".join(problems))

    saved, why = save_edited(tool, everything, "dynamic.onnx", "make-dim-dynamic",
                             "{'input': <'x'>, 'axis': <int64 1>, 'symbol': <'C'>}")
    problems = [why] if saved is None else []
    if saved is not None:
        b = onnx.load(saved)
        dims = [d.dim_param or d.dim_value for d in b.graph.input[0].type.tensor_type.shape.dim]
        if dims != ["N", "C"]:
            problems.append(f"input x dims {dims} != ['N', 'C']")
        old, new = a.graph.input[0].type, b.graph.input[0].type
        if (new.denotation, new.tensor_type.shape.dim[0].denotation) != (old.denotation, old.tensor_type.shape.dim[0].denotation):
            problems.append("the input's type and dim denotations were not carried over")
        if list(a.graph.sparse_initializer) != list(b.graph.sparse_initializer):
            problems.append("sparse initializers changed")
        if list(a.training_info) != list(b.training_info) or list(a.functions) != list(b.functions):
            problems.append("training_info or functions changed")
        if a.graph.metadata_props != b.graph.metadata_props or a.graph.input[0].metadata_props != b.graph.input[0].metadata_props:
            problems.append("graph or input metadata_props changed")
    tap(not problems, "make-dim-dynamic: the new dim is saved with the old denotations, sparse initializers, "
        "training_info, functions and metadata are kept", "\n".join(problems))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) == 2 else sys.exit(__doc__))
