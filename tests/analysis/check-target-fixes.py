#!/usr/bin/env python3
"""graft-cli lint --target NAME --fix: the fixes make the target reject
fewer nodes and the graph split into fewer partitions, and the fixed model
still computes what the export computed.

Usage: check-target-fixes.py GRAFT_CLI SOURCE_DIR

On real torch exports (make-target-models.py, cached under
tests/fixtures-generated/targets: BERT exported by the TorchScript-based
exporter with a dynamic batch, and by the dynamo exporter at opset 18;
GPT-2), for each model and target:
  - lint --fix -o OUT --save-recipe R applies the fixes; a fresh
    lint --json of OUT gives fewer partitions and fewer unsupported-op
    diagnostics than the export's, with the figures the fix printed;
  - OUT passes onnx.checker, and onnxruntime gives the export's outputs on
    the same inputs (the Erf decomposition's 4e-7 inside the tolerance);
    Graft's runtime on OUT gives them too;
  - edit EXPORT --recipe R (the recipe the fix saved) gives the same
    verdicts as OUT.
And on a model made for the rule, the Erf decomposition against math.erf
from -6 to 6 and at 0, ±inf and NaN.

graft-cli diff --target (issue 42's point 5): BERT against itself under
ort-nnapi and openvino gives each side lint --target's figures, and the
nodes decided differently are exactly those one target rejects and the
other runs; the export against its fixed copy under ort-nnapi gives both
files' lint figures.
"""
import json
import math
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

# model, target, the fix ids expected in order
CASES = [
    ("bert_dynamic", "ort-nnapi",
     ["static-shapes", "fold-constants", "int32-indices", "decompose-layer-normalization", "decompose-erf"]),
    ("bert_dynamo", "ort-nnapi", ["fold-constants", "int32-indices", "decompose-layer-normalization", "decompose-erf"]),
    ("gpt2", "ort-nnapi", ["fold-constants", "int32-indices", "decompose-layer-normalization"]),
    ("bert_dynamic", "ort-coreml-mlprogram", ["static-shapes", "fold-constants"]),
]

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def run(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(map(str, args))} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    return out.stdout


def verdicts(cli, model, target):
    report = json.loads(run([cli, "lint", str(model), "--target", target, "--json"]))
    unsupported = sum(1 for d in report["diagnostics"] if d["rule"] == "unsupported-op")
    return report["partitions"]["count"], unsupported, report["partitions"]


def inputs_for(model_path):
    model = onnx.load(str(model_path), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.RandomState(0)
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        kind = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in kind.shape.dim]
        if kind.elem_type == TensorProto.INT64:
            feeds[value.name] = rng.randint(0, 50, shape).astype(np.int64)
        else:
            feeds[value.name] = rng.randn(*shape).astype(np.float32)
    return feeds


def ort_outputs(model_path, feeds):
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def graft_outputs(cli, model_path, feeds, work):
    args = [cli, "run", str(model_path), "-o", str(work / "graft-out")]
    for name, array in feeds.items():
        path = work / f"in-{len(args)}.npy"
        np.save(path, array)
        args += ["--input", f"{name}={path}"]
    subprocess.run(args, check=True, capture_output=True)
    model = onnx.load(str(model_path), load_external_data=False)
    return [np.load(work / "graft-out" / f"{o.name}.npy") for o in model.graph.output]


def check_case(cli, fixtures, name, target, expected_ids, work):
    export = fixtures / name / "model.onnx"
    fixed = work / f"{name}-{target}.onnx"
    recipe = work / f"{name}-{target}.json"
    text = run([cli, "lint", str(export), "--target", target, "--fix", "-o", str(fixed), "--save-recipe", str(recipe)])
    ids = re.findall(r"^  \d+\. \[([a-z0-9-]+)\]", text, re.M)
    planned = re.search(r"^Fixes for \S+: \d+ fix(?:es)?: (\d+) → (\d+) partitions?, (\d+)/(\d+) → (\d+)/(\d+) nodes", text, re.M)
    before = verdicts(cli, export, target)
    after = verdicts(cli, fixed, target)
    print(f"{name} on {target}: fixes {ids}; partitions {before[0]} → {after[0]}, "
          f"unsupported nodes {before[1]} → {after[1]}")
    if ids != expected_ids:
        fail(f"{name} on {target}: fixes {ids}, expected {expected_ids}")
    if after[0] >= before[0] or after[1] >= before[1]:
        fail(f"{name} on {target}: partitions {before[0]} → {after[0]}, unsupported {before[1]} → {after[1]}: no fall")
    if planned is None:
        fail(f"{name} on {target}: no plan summary in:\n{text}")
    else:
        figures = [int(g) for g in planned.groups()]
        said = (figures[0], figures[1], figures[2], figures[3], figures[4], figures[5])
        seen = (before[0], after[0], before[2]["supported_nodes"], before[2]["total_nodes"], after[2]["supported_nodes"],
                after[2]["total_nodes"])
        if said != seen:
            fail(f"{name} on {target}: the plan said {said} (partitions, supported/total before and after), "
                 f"lint of the files says {seen}")
    onnx.checker.check_model(str(fixed))
    feeds = inputs_for(fixed)
    expected = ort_outputs(export, feeds)
    for label, got in (("onnxruntime", ort_outputs(fixed, feeds)), ("Graft", graft_outputs(cli, fixed, feeds, work))):
        for want, have in zip(expected, got):
            if want.shape != have.shape or not np.allclose(want, have, rtol=1e-4, atol=1e-4):
                worst = np.abs(want - have).max() if want.shape == have.shape else f"shape {have.shape} ≠ {want.shape}"
                fail(f"{name} on {target}: {label} on the fixed model differs from the export: {worst}")
    replayed = work / f"{name}-{target}-replayed.onnx"
    subprocess.run([cli, "edit", str(export), "-o", str(replayed), "--recipe", str(recipe), "--no-verify"], check=True,
                   capture_output=True)
    again = verdicts(cli, replayed, target)
    if again[:2] != after[:2]:
        fail(f"{name} on {target}: the recipe replayed gives {again[:2]}, the fix {after[:2]}")


def check_erf(cli, work):
    """Erf decomposed for NNAPI against math.erf."""
    x = np.concatenate([np.linspace(-6, 6, 2001, dtype=np.float32),
                        np.array([0.0, -0.0, np.inf, -np.inf, 1e-30, -1e-30, np.nan], np.float32)])
    graph = helper.make_graph([helper.make_node("Erf", ["x"], ["y"], name="erf")], "erf",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.size])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    source, fixed = work / "erf.onnx", work / "erf-fixed.onnx"
    onnx.save(model, source)
    run([cli, "lint", str(source), "--target", "ort-nnapi", "--fix", "-o", str(fixed)])
    count, unsupported, _ = verdicts(cli, fixed, "ort-nnapi")
    if unsupported != 0:
        fail(f"Erf decomposed: {unsupported} nodes still rejected by ort-nnapi")
    reference = np.array([math.erf(v) if not math.isnan(v) else math.nan for v in x.astype(np.float64)])
    for label, (got,) in (("onnxruntime", ort_outputs(fixed, {"x": x})),
                          ("Graft", graft_outputs(cli, fixed, {"x": x}, work))):
        error = np.nanmax(np.abs(got.astype(np.float64) - reference))
        nan_kept = np.isnan(got[-1]) and not np.isnan(got[:-1]).any()
        print(f"Erf decomposed, {label}: max |error| {error:.2e} over {x.size} points, NaN kept: {nan_kept}")
        if not error <= 4e-7 or not nan_kept:
            fail(f"Erf decomposed ({label}): max |error| {error}, NaN kept {nan_kept}")


def diff_targets(cli, a, b, targets):
    args = [cli, "diff", str(a), str(b), "--json"]
    for target in targets:
        args += ["--target", target]
    return json.loads(run(args))["targets"]


def check_diff(cli, fixtures, work):
    bert = fixtures / "bert" / "model.onnx"
    sides = diff_targets(cli, bert, bert, ["ort-nnapi", "openvino"])
    verdicts_by_target = {}
    for side, target in (("a", "ort-nnapi"), ("b", "openvino")):
        report = json.loads(run([cli, "lint", str(bert), "--target", target, "--json"]))
        verdicts_by_target[target] = {n["node"]: n["supported"] for n in report["target"]["nodes"]}
        got = (sides[side]["target"], sides[side]["partitions"], sides[side]["supported_nodes"], sides[side]["total_nodes"])
        want = (target, report["partitions"]["count"], report["partitions"]["supported_nodes"],
                report["partitions"]["total_nodes"])
        if got != want:
            fail(f"diff --target, side {side}: {got}, lint --target says {want}")
    nnapi, openvino = verdicts_by_target["ort-nnapi"], verdicts_by_target["openvino"]
    expected = sorted(n for n in nnapi if nnapi[n] != openvino.get(n))
    listed = sorted(d["a"]["name"] for d in sides["differences"] if d["a"] is not None)
    print(f"diff bert bert --target ort-nnapi --target openvino: {sides['a']['summary']} | {sides['b']['summary']}; "
          f"{len(listed)} nodes decided differently, lint says {len(expected)}")
    if listed != expected or any(d["b"] is None for d in sides["differences"]):
        fail(f"diff --target lists {listed}, the two lints differ on {expected}")
    export = fixtures / "bert_dynamic" / "model.onnx"
    fixed = work / "bert_dynamic-ort-nnapi.onnx"
    sides = diff_targets(cli, export, fixed, ["ort-nnapi"])
    got = [(sides[s]["target"], sides[s]["partitions"]) for s in ("a", "b")]
    want = [("ort-nnapi", verdicts(cli, path, "ort-nnapi")[0]) for path in (export, fixed)]
    print(f"diff export fixed --target ort-nnapi: {sides['a']['summary']} | {sides['b']['summary']}")
    if got != want:
        fail(f"diff export fixed --target ort-nnapi: {got}, lint says {want}")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    cli, source = sys.argv[1], pathlib.Path(sys.argv[2])
    fixtures = source / "tests" / "fixtures-generated" / "targets"
    names = sorted({case[0] for case in CASES} | {"bert"})
    generate = [sys.executable, str(source / "tests" / "analysis" / "make-target-models.py"), str(fixtures)]
    generated = subprocess.run(generate + names, capture_output=True, text=True)
    if generated.returncode != 0:
        raise SystemExit(f"make-target-models.py failed:\n{generated.stdout}{generated.stderr}")
    with tempfile.TemporaryDirectory() as folder:
        work = pathlib.Path(folder)
        for name, target, ids in CASES:
            check_case(cli, fixtures, name, target, ids, work)
        check_erf(cli, work)
        check_diff(cli, fixtures, work)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
