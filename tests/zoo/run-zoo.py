#!/usr/bin/env python3
"""Every capability of Graft checked on every file of the zoo.

    tests/python tests/zoo/run-zoo.py GRAFT_CLI [--fast] [--jobs N] [--table docs/zoo.md] [MODEL...]

The files come from make-zoo.py (made first where missing or stale). For each
model and each file PyTorch could make, one TAP case per capability:

  open       graft-cli info reads it, and its op histogram equals PyTorch's
             (the aten ops of inlined_graph for TorchScript; the program's
             call_function targets for .pt2, less the getitem calls that
             unpack tuples and Graft's prim:: list glue; the node types for ONNX)
  lint       graft-cli lint --json answers (exit 0 or 1, valid JSON)
  render     graft-cli render writes an SVG
  run        graft-cli run = eager PyTorch within 1e-4·max|ref| at the export batch;
             on ONNX files (not with --fast) also timed against onnxruntime at
             one thread (the table's Graft/ORT column)
  run-bN     the same at the other batch, where the file itself reproduces the
             model there in its own consumer (torch.jit.load, torch.export.load,
             onnxruntime)
  convert    TorchScript / .pt2 → ONNX with graft-cli convert: onnx.checker full
             check, onnxruntime = eager PyTorch at the export batch (and the
             other batch when the batch dim stayed dynamic)
and per model:
  diff-trace-script   graft-cli diff traced.pt scripted.pt says the outputs agree
             where PyTorch's do (and differ where PyTorch's do)
  diff-ts-onnx        graft-cli diff traced.pt ts.onnx says the outputs agree
  dynamic    graft-cli edit ts.onnx --dynamic INPUT:0=batch for every input,
             then onnxruntime at the other batch = eager PyTorch

A cell listed in expected-failures.txt ("MODEL FILE CAPABILITY  # reason")
is a TODO with its reason; a listed cell that passes fails ("now passes:
remove it from the list"), as the conformance suite does. A cell whose file
PyTorch could not make is not applicable and is counted apart, with
PyTorch's error in the table. --table writes docs/zoo.md.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("GRAFT_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
ZOO = os.path.join(SOURCE, "tests", "fixtures-generated", "zoo")
EXPECTED = os.path.join(HERE, "expected-failures.txt")
FILES = ["traced.pt", "scripted.pt", "ts.onnx", "exported.pt2", "dynamo.onnx"]
CLI_SECONDS = 600


class Cell:
    def __init__(self, model, artifact, capability):
        self.model, self.artifact, self.capability = model, artifact, capability
        self.status = None  # "pass", "fail", "n/a"
        self.detail = ""
        self.seconds = 0.0
        self.speed = None   # Graft / onnxruntime at one thread (ONNX files' run cells)

    @property
    def key(self):
        return (self.model, self.artifact, self.capability)


def cli(graft_cli, *args, timeout=CLI_SECONDS):
    try:
        return subprocess.run([graft_cli] + [str(a) for a in args], capture_output=True, text=True,
                              timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, "timeout", "", "graft-cli %s: no answer after %d s" %
                                           (args[0], timeout))


def message(run):
    text = (run.stderr or run.stdout or "").strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return " ".join(lines[:2])[:400] if lines else "exit status %s" % run.returncode


def load_arrays(folder):
    names = sorted(os.listdir(folder), key=lambda n: int(n.split(".")[0]))
    return [np.load(os.path.join(folder, n)) for n in names]


def _make_zoo():
    """make-zoo.py as a module (its name has a hyphen): one max_error for both scripts."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_zoo", os.path.join(HERE, "make-zoo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


max_error = _make_zoo().max_error


def graft_outputs(graft_cli, model, inputs, workdir):
    """Runs the model in Graft's runtime; the outputs in the order graft-cli prints them."""
    out_dir = tempfile.mkdtemp(dir=workdir)
    args = ["run", model, "-o", out_dir]
    for path in inputs:
        args += ["-i", path]
    start = time.perf_counter()
    run = cli(graft_cli, *args)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        return None, message(run), seconds
    outs = []
    for line in run.stdout.splitlines():
        m = re.match(r"^(\S.*?): \S+\[", line)
        if not m:
            continue
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in m.group(1))
        path = os.path.join(out_dir, safe + ".npy")
        if os.path.exists(path):
            outs.append(np.load(path))
        elif os.path.isdir(os.path.join(out_dir, safe)):
            seq = os.path.join(out_dir, safe)
            outs += [np.load(os.path.join(seq, "%d.npy" % k)) for k in range(len(os.listdir(seq)))]
    return outs, None, seconds


def input_paths(folder, batch):
    sub = os.path.join(folder, "inputs-b%d" % batch)
    return [os.path.join(sub, n) for n in sorted(os.listdir(sub), key=lambda n: int(n.split(".")[0]))]


# ------------------------------------------------------------------ capabilities

HIGHER_ORDER_OPS = {"wrap_with_autocast", "wrap_with_set_grad_enabled", "cond", "while_loop", "map_impl",
                    "invoke_subgraph", "scan", "associative_scan", "auto_functionalized", "with_effects"}


def normalize_program_op(target):
    # aten.conv2d.default → aten::conv2d (graft-cli info names .pt2 ops like TorchScript's);
    # Python's operators on sizes, <built-in function mul>, → _operator::mul
    m = re.match(r"<built-in function (\w+)>$", target)
    if m:
        return "_operator::" + m.group(1)
    # a higher-order op's target prints as its bare name in the record
    if target in HIGHER_ORDER_OPS:
        return "higher_order::" + target
    parts = target.split(".")
    if len(parts) >= 2 and parts[0] in ("aten", "prims", "quantized_decomposed", "higher_order"):
        return parts[0] + "::" + parts[1]
    return target


def program_body_ops(path):
    """The ops inside a .pt2's higher-order bodies (wrap_with_autocast's
    submodule graph, cond's branches), which the record counts as one
    node each and Graft draws as subgraphs, read from the file torch wrote."""
    import zipfile
    ops = collections.Counter()

    def walk(nodes, top):
        for node in nodes:
            if not top:   # the file's targets are "torch.ops.aten.to.dtype"
                ops[normalize_program_op(re.sub(r"^torch\.ops\.", "", node["target"]))] += 1
            for named in node.get("inputs", []):
                graph = named.get("arg", {}).get("as_graph")
                if graph:
                    walk(graph["graph"]["nodes"], False)

    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if re.search(r"(^|/)models/[^/]+\.json$", name) or name.endswith("serialized_exported_program.json"):
                program = json.loads(z.read(name))
                walk(program["graph_module"]["graph"]["nodes"], True)
    return ops


def check_open(c, graft_cli, path, record):
    run = cli(graft_cli, "info", "--json", path)
    if run.returncode != 0:
        return "fail", message(run)
    info = json.loads(run.stdout)
    graft_ops = collections.Counter(info["graphs"][0]["ops"]) if info.get("graphs") else collections.Counter()
    torch_ops = collections.Counter()
    for op, n in record.get("ops", {}).items():
        if c.artifact.endswith(".onnx"):
            torch_ops["onnx::" + op] += n
        elif c.artifact.endswith(".pt2"):
            torch_ops[normalize_program_op(op)] += n
        else:
            torch_ops[op] += n
    if c.artifact.endswith(".pt"):
        graft_ops = collections.Counter({k: v for k, v in graft_ops.items() if k.startswith("aten::")})
    if c.artifact.endswith(".pt2"):
        # Graft draws a list argument (cat's tensors) as a prim::ListConstruct node and wires a
        # tuple result's elements directly, where the program has getitem calls: glue, not ops
        graft_ops = collections.Counter({k: v for k, v in graft_ops.items() if not k.startswith("prim::")})
        if any(op.startswith("higher_order::") for op in torch_ops):
            torch_ops += program_body_ops(path)
        torch_ops.pop("_operator::getitem", None)
    if c.artifact.endswith(".onnx"):
        graft_ops = collections.Counter({k: v for k, v in graft_ops.items() if "::" in k})
        graft_ops = collections.Counter({("onnx::" + k.split("::", 1)[1]) if k.startswith("onnx::") else k: v
                                         for k, v in graft_ops.items()})
    if graft_ops != torch_ops:
        diffs = sorted(set(graft_ops) | set(torch_ops), key=lambda k: -abs(graft_ops[k] - torch_ops[k]))
        shown = ["%s %d vs %d" % (k, graft_ops[k], torch_ops[k]) for k in diffs if graft_ops[k] != torch_ops[k]]
        return "fail", "histogram differs from PyTorch's (Graft vs PyTorch): " + ", ".join(shown[:4])
    return "pass", "%d nodes" % sum(graft_ops.values())


def check_lint(c, graft_cli, path, record):
    run = cli(graft_cli, "lint", "--json", path)
    if run.returncode not in (0, 1):
        return "fail", message(run)
    try:
        report = json.loads(run.stdout)
    except ValueError:
        return "fail", "lint --json printed no JSON: " + message(run)
    diagnostics = report.get("diagnostics", report if isinstance(report, list) else [])
    return "pass", "%d diagnostics" % len(diagnostics)


def check_render(c, graft_cli, path, record, workdir):
    out = os.path.join(workdir, "render.svg")
    run = cli(graft_cli, "render", path, "-o", out)
    if run.returncode != 0:
        return "fail", message(run)
    if not os.path.exists(out) or os.path.getsize(out) < 200:
        return "fail", "no picture written"
    return "pass", "%d KB" % (os.path.getsize(out) // 1024)


TIME_PEERS = True     # off for make test's fast subset
SPEED_ROUNDS = 2      # interleaved Graft / onnxruntime processes
SPEED_REPEAT = 5      # runs per process, load excluded
PEER_RUN = os.path.join(os.path.dirname(HERE), "bench", "peer-run.py")


def median_run_ms(command):
    """The median time per run a graft-cli run --repeat / peer-run.py process prints, or None."""
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=CLI_SECONDS, errors="replace")
    except subprocess.TimeoutExpired:
        return None
    m = re.search(r"^median time per run: ([0-9.]+) ms", run.stdout, re.M)
    return float(m.group(1)) if run.returncode == 0 and m else None


def speed_at_one_thread(graft_cli, path, inputs):
    """Graft / onnxruntime at one thread on an ONNX file: medians of interleaved processes, each loading the
    model once and running it SPEED_REPEAT times (load excluded). (ratio, graft ms, onnxruntime ms) or None."""
    graft, ort = [], []
    feed = []
    for p in inputs:
        feed += ["--input", p]
    for _ in range(SPEED_ROUNDS):
        g = median_run_ms([graft_cli, "run", path, "--threads", "1", "--repeat", str(SPEED_REPEAT)] +
                          [a if a != "--input" else "-i" for a in feed])
        o = median_run_ms([sys.executable, PEER_RUN, "ort", path, "--threads", "1", "--repeat", str(SPEED_REPEAT)] +
                          feed)
        if g is None or o is None or o <= 0:
            return None
        graft.append(g)
        ort.append(o)
    g, o = statistics.median(graft), statistics.median(ort)
    return g / o, g, o


def check_run(c, graft_cli, path, folder, batch, workdir, time_peers=False):
    refs = load_arrays(os.path.join(folder, "outputs-b%d" % batch))
    outs, error, seconds = graft_outputs(graft_cli, path, input_paths(folder, batch), workdir)
    if error:
        return "fail", error
    error = max_error(refs, outs)
    if error:
        return "fail", error
    speed = speed_at_one_thread(graft_cli, path, input_paths(folder, batch)) if time_peers else None
    if speed:
        c.speed = speed[0]
        return "pass", "%.2f s; Graft/onnxruntime at 1 thread %.2f (%.2f ms / %.2f ms per run)" % (
            seconds, speed[0], speed[1], speed[2])
    return "pass", "%.2f s" % seconds


def check_convert(c, graft_cli, path, folder, manifest, workdir):
    import onnx
    import onnxruntime as ort
    out = os.path.join(workdir, "converted.onnx")
    args = ["convert", path, "-o", out]
    if path.endswith(".pt"):
        info = json.loads(cli(graft_cli, "info", "--json", path).stdout or "{}")
        # the inputs a caller must give (an Optional left out is None)
        names = [i["name"] for i in info.get("inputs", []) if not i.get("optional")]
        if len(names) != len(manifest["inputs"]):
            return "fail", "graft-cli info lists %d inputs, the model has %d" % (len(names), len(manifest["inputs"]))
        for name, spec in zip(names, manifest["inputs"]):
            args += ["--shape", "%s=%s" % (name, "x".join(str(d) for d in spec["shape"])),
                     "--dynamic", "%s:0=batch" % name]
            if spec.get("dtype", "float32") != "float32":   # TorchScript declares no dtypes
                args += ["--dtype", "%s=%s" % (name, spec["dtype"])]
    run = cli(graft_cli, *args)
    if run.returncode != 0:
        return "fail", message(run)
    try:
        model = onnx.load(out)
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:
        return "fail", "written file fails onnx.checker: %s" % str(e).splitlines()[0][:300]
    try:
        session = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    except Exception as e:
        return "fail", "onnxruntime refuses the written file: %s" % str(e).splitlines()[0][:300]
    batches = [manifest["export_batch"]]
    first = session.get_inputs()[0].shape
    if first and isinstance(first[0], str):
        batches.append(manifest["other_batch"])
    for batch in batches:
        values = load_arrays(os.path.join(folder, "inputs-b%d" % batch))
        feeds = {i.name: v for i, v in zip(session.get_inputs(), values)}
        try:
            outs = session.run(None, feeds)
        except Exception as e:
            return "fail", "onnxruntime at batch %d: %s" % (batch, str(e).splitlines()[0][:300])
        error = max_error(load_arrays(os.path.join(folder, "outputs-b%d" % batch)), outs)
        if error:
            return "fail", "onnxruntime at batch %d: %s" % (batch, error)
    return "pass", "%d nodes, checked at batch %s" % (len(model.graph.node), " and ".join(map(str, batches)))


def check_diff(c, graft_cli, a, b, folder, manifest, expect_agree):
    # The zoo's bound (max_error): 1e-4 of the outputs' scale, as an atol;
    # a bare 1e-5 fails elements near zero of outputs near 50 (ResNet-50)
    # that PyTorch's own comparison accepts.
    refs = load_arrays(os.path.join(folder, "outputs-b%d" % manifest["export_batch"]))
    scale = max([float(np.abs(np.asarray(r, dtype=np.float64)).max()) for r in refs if np.asarray(r).size] or [0.0])
    args = ["diff", a, b, "--json", "--rtol", "1e-4", "--atol", "%.3g" % max(1e-4 * scale, 1e-6)]
    for path in input_paths(folder, manifest["export_batch"]):
        args += ["-i", path]
    run = cli(graft_cli, *args)
    if run.returncode not in (0, 1):
        return "fail", message(run)
    try:
        result = json.loads(run.stdout)
    except ValueError:
        return "fail", "diff --json printed no JSON: " + message(run)
    runs = (result.get("numeric") or {}).get("runs") or []
    if not runs:
        return "fail", "the diff ran neither model"
    for r in runs:
        if r.get("error_a") or r.get("error_b"):
            return "fail", "Graft could not run %s" % (r.get("error_a") or r.get("error_b"))[:300]
    agree = all(r.get("outputs_close") for r in runs)
    if agree != expect_agree:
        return "fail", "Graft says the outputs %s, PyTorch's %s" % ("agree" if agree else "differ",
                                                                    "agree" if expect_agree else "differ")
    return "pass", (result.get("summary") or "")[:200]


def check_dynamic(c, graft_cli, folder, manifest, workdir):
    import onnxruntime as ort
    source = os.path.join(folder, "ts.onnx")
    out = os.path.join(workdir, "dynamic.onnx")
    args = ["edit", source, "-o", out]
    for k in range(len(manifest["inputs"])):
        args += ["--dynamic", "input_%d:0=batch" % k]
    run = cli(graft_cli, *args)
    if run.returncode != 0:
        return "fail", message(run)
    batch = manifest["other_batch"]
    try:
        session = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
        values = load_arrays(os.path.join(folder, "inputs-b%d" % batch))
        outs = session.run(None, {i.name: v for i, v in zip(session.get_inputs(), values)})
    except Exception as e:
        return "fail", "onnxruntime at batch %d: %s" % (batch, str(e).splitlines()[0][:300])
    error = max_error(load_arrays(os.path.join(folder, "outputs-b%d" % batch)), outs)
    if error:
        return "fail", "onnxruntime at batch %d: %s" % (batch, error)
    return "pass", "onnxruntime at batch %d = PyTorch" % batch


# ------------------------------------------------------------------ one model

def model_cells(graft_cli, name, workroot):
    folder = os.path.join(ZOO, name)
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    workdir = tempfile.mkdtemp(prefix=name + "-", dir=workroot)
    cells = []
    other = manifest.get("other_batch", 3)

    def cell(artifact, capability, check, *args):
        c = Cell(name, artifact, capability)
        start = time.perf_counter()
        try:
            c.status, c.detail = check(c, *args)
        except Exception as e:  # a checker's own failure is the cell's failure, named
            c.status, c.detail = "fail", "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
        c.seconds = time.perf_counter() - start
        cells.append(c)

    def not_applicable(artifact, capability, why):
        c = Cell(name, artifact, capability)
        c.status, c.detail = "n/a", why
        cells.append(c)

    records = manifest["artifacts"]
    for artifact in FILES:
        record = records.get(artifact, {"made": False, "error": "not made"})
        path = os.path.join(folder, artifact)
        capabilities = ["open", "lint", "render", "run", "run-b%d" % other]
        if artifact in ("traced.pt", "scripted.pt", "exported.pt2"):
            capabilities.append("convert")
        if not record.get("made"):
            for cap in capabilities:
                not_applicable(artifact, cap, "PyTorch: " + record.get("error", "not made"))
            continue
        cell(artifact, "open", check_open, graft_cli, path, record)
        cell(artifact, "lint", check_lint, graft_cli, path, record)
        cell(artifact, "render", check_render, graft_cli, path, record, workdir)
        cell(artifact, "run", lambda c: check_run(c, graft_cli, path, folder, manifest["export_batch"], workdir,
                                                  time_peers=TIME_PEERS and artifact.endswith(".onnx")))
        at_other = record.get("batch_%d" % other, "")
        if at_other.startswith("agrees"):
            cell(artifact, "run-b%d" % other, lambda c: check_run(c, graft_cli, path, folder, other, workdir))
        else:
            not_applicable(artifact, "run-b%d" % other, "the file in its own consumer %s" % (at_other or "was not run"))
        if "convert" in capabilities:
            cell(artifact, "convert", lambda c: check_convert(c, graft_cli, path, folder, manifest, workdir))

    made = {a for a, r in records.items() if r.get("made")}
    traced, scripted = os.path.join(folder, "traced.pt"), os.path.join(folder, "scripted.pt")
    if {"traced.pt", "scripted.pt"} <= made and "trace_vs_script" in manifest:
        agree = manifest["trace_vs_script"] == "agree"
        cell("traced.pt+scripted.pt", "diff-trace-script",
             lambda c: check_diff(c, graft_cli, traced, scripted, folder, manifest, agree))
    else:
        not_applicable("traced.pt+scripted.pt", "diff-trace-script", "PyTorch made %s" %
                       (" and ".join(sorted(made & {"traced.pt", "scripted.pt"})) or "neither file"))
    if {"traced.pt", "ts.onnx"} <= made:
        cell("traced.pt+ts.onnx", "diff-ts-onnx",
             lambda c: check_diff(c, graft_cli, traced, os.path.join(folder, "ts.onnx"), folder, manifest, True))
    else:
        not_applicable("traced.pt+ts.onnx", "diff-ts-onnx", "PyTorch did not make both files")
    if "ts.onnx" in made:
        cell("ts.onnx", "dynamic", lambda c: check_dynamic(c, graft_cli, folder, manifest, workdir))
    else:
        not_applicable("ts.onnx", "dynamic", "PyTorch: " + records.get("ts.onnx", {}).get("error", "not made"))
    shutil.rmtree(workdir, ignore_errors=True)
    return manifest, cells


# ------------------------------------------------------------------ expected failures, TAP, table

def read_expected():
    expected = {}
    if not os.path.exists(EXPECTED):
        return expected
    with open(EXPECTED) as f:
        for line in f:
            text, _, reason = line.partition("#")
            parts = text.split()
            if len(parts) == 3:
                expected[tuple(parts)] = reason.strip()
    return expected


def write_expected(expected, results):
    """The failing cells of this run replace the listed ones of the same models."""
    ran = {manifest["model"] for manifest, _ in results}
    keep = {k: v for k, v in expected.items() if k[0] not in ran}
    for _, cells in results:
        for c in cells:
            if c.status == "fail":
                keep[c.key] = " ".join(c.detail.replace(ZOO + os.sep, "").split())[:300]
    header = []
    with open(EXPECTED) as f:
        for line in f:
            if not line.startswith("#"):
                break
            header.append(line)
    with open(EXPECTED + ".tmp", "w") as f:
        f.writelines(header)
        for key in sorted(keep):
            f.write("%s %s %s  # %s\n" % (key + (keep[key],)))
    os.replace(EXPECTED + ".tmp", EXPECTED)


def _graft_commit():
    try:
        return subprocess.run(["git", "-C", SOURCE, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def save_cells(manifest, cells, commit):
    """The model's cells as this run found them, beside its files: --table-all
    builds the whole zoo's table from the latest run of each model."""
    record = {"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M"),
              "cells": [{"artifact": c.artifact, "capability": c.capability, "status": c.status,
                         "detail": c.detail, "seconds": c.seconds, "speed": c.speed} for c in cells]}
    path = os.path.join(ZOO, manifest["model"], "cells.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f, indent=1)
    os.replace(path + ".tmp", path)


def saved_results(names):
    """(manifest, cells, run) of each model whose cells.json its current files made."""
    results = []
    for name in names:
        folder = os.path.join(ZOO, name)
        try:
            with open(os.path.join(folder, "manifest.json")) as f:
                manifest = json.load(f)
            with open(os.path.join(folder, "cells.json")) as f:
                run = json.load(f)
            if os.path.getmtime(os.path.join(folder, "cells.json")) < os.path.getmtime(os.path.join(folder, "digest")):
                continue
        except (OSError, ValueError):
            continue
        cells = []
        for r in run["cells"]:
            c = Cell(name, r["artifact"], r["capability"])
            c.status, c.detail, c.seconds = r["status"], r["detail"], r.get("seconds", 0.0)
            c.speed = r.get("speed")
            cells.append(c)
        results.append((manifest, cells, run))
    return results


def write_table(path, results, expected, seconds, runs=None):
    families = collections.OrderedDict()
    for manifest, cells in results:
        families.setdefault(manifest.get("family", "?"), []).append((manifest, cells))
    counts = collections.Counter(c.status for _, cells in results for c in cells)
    applicable = counts["pass"] + counts["fail"]
    lines = ["# The zoo: Graft on the models users bring", "",
             "Generated by `make zoo` (tests/zoo/run-zoo.py); do not edit by hand. "
             "%d models, random weights, built from their libraries' constructors and configs "
             "(tests/zoo/models.py)%s; every file PyTorch %s could make of each (tests/zoo/make-zoo.py)." %
             (len(results), _zoo_share(len(results)), _torch_version()), "",
             "**%d of %d applicable cells pass (%.1f %%)**; %d cells are not applicable (PyTorch could not make "
             "the file, or the file does not reproduce the model at the other batch in its own consumer). "
             "Each failing cell is listed in tests/zoo/expected-failures.txt with its reason. %s" %
             (counts["pass"], applicable, 100.0 * counts["pass"] / max(applicable, 1), counts["n/a"],
              ("Checked in %.0f s." % seconds) if runs is None else
              "Each model's cells are from its latest run (%s; Graft commits %s)." %
              (" to ".join(sorted({runs[0], runs[1]})), ", ".join(sorted(set(runs[2]))))), "",
             "Capabilities: **open** (info; op histogram = PyTorch's), **lint**, **render**, **run** (Graft's runtime "
             "= eager PyTorch within 1e-4·max|ref| at batch 2) and **run-b3** (at batch 3), **convert** (→ ONNX, "
             "onnx.checker full check, onnxruntime = PyTorch), **diff-trace-script**, **diff-ts-onnx** (graft-cli "
             "diff agrees with PyTorch about the outputs), **dynamic** (make-dynamic on the static ONNX export, "
             "onnxruntime at batch 3 = PyTorch). **Graft/ORT 1 thread**: Graft's runtime over onnxruntime's on the "
             "ONNX file at batch 2, one thread each, load excluded, medians of %d interleaved processes of %d runs; "
             "timed beside the zoo's other checks, so indicative: `make bench-zoo` measures speed on a quiet "
             "machine." % (SPEED_ROUNDS, SPEED_REPEAT), "",
             "✓ passes · ✗ fails (the reason below the table) · – not applicable", ""]
    speeds = sorted(c.speed for _, cells in results for c in cells if c.capability == "run" and c.speed)
    if speeds:
        lines[-2:-2] = ["Graft/onnxruntime at one thread over the %d ONNX files timed: median **%.2f**, %d of them "
                        "at or under 1.0, the slowest %.2f." % (len(speeds), statistics.median(speeds),
                                                                sum(1 for r in speeds if r <= 1.0), speeds[-1]), ""]
    caps = ["open", "lint", "render", "run", "run-b3", "convert"]
    lines.append("| model | file | " + " | ".join(caps) + " | Graft/ORT 1 thread |")
    lines.append("|---|---|" + "---|" * len(caps) + "---|")
    failures = []
    for family, entries in families.items():
        for manifest, cells in entries:
            by_key = {(c.artifact, c.capability): c for c in cells}
            for artifact in FILES:
                marks = []
                for cap in caps:
                    c = by_key.get((artifact, cap))
                    if c is None:
                        marks.append("")
                    else:
                        marks.append({"pass": "✓", "fail": "✗", "n/a": "–"}[c.status])
                record = manifest["artifacts"].get(artifact, {})
                label = artifact if record.get("made") else "%s (PyTorch failed)" % artifact
                run = by_key.get((artifact, "run"))
                speed = "%.2f" % run.speed if run is not None and run.speed else ""
                lines.append("| %s | %s | %s | %s |" % (manifest["model"], label, " | ".join(marks), speed))
            extra = [by_key.get(k) for k in (("traced.pt+scripted.pt", "diff-trace-script"),
                                             ("traced.pt+ts.onnx", "diff-ts-onnx"), ("ts.onnx", "dynamic"))]
            lines.append("| %s | | %s |" % (manifest["model"], " · ".join(
                "%s %s" % (c.capability, {"pass": "✓", "fail": "✗", "n/a": "–"}[c.status]) for c in extra if c)))
            failures += [c for c in cells if c.status == "fail"]
    lines += ["", "## Failing cells", ""]
    for c in failures:
        lines.append("- `%s` %s **%s**: %s" % (c.model, c.artifact, c.capability, c.detail.replace("|", "/")))
    lines += ["", "## What PyTorch could not make", ""]
    for manifest, _ in results:
        for artifact, record in manifest["artifacts"].items():
            if not record.get("made"):
                lines.append("- `%s` %s: %s" % (manifest["model"], artifact, record.get("error", "")[:300]))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def _zoo_share(checked):
    sys.path.insert(0, HERE)
    import models
    return "" if checked == len(models.ZOO) else ", %d of the zoo's %d (the others were not checked in this run)" % (
        checked, len(models.ZOO))


def _torch_version():
    try:
        import torch
        return torch.__version__
    except ImportError:
        return "?"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("graft_cli")
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--table")
    parser.add_argument("--no-make", action="store_true", help="use the files as they are")
    parser.add_argument("--write-expected", action="store_true",
                        help="rewrite expected-failures.txt's entries for these models from this run")
    parser.add_argument("--table-all", metavar="TABLE",
                        help="write TABLE from every model's latest saved run (no model is run)")
    parser.add_argument("models", nargs="*")
    args = parser.parse_intermixed_args()
    started = time.perf_counter()
    sys.path.insert(0, HERE)
    import models
    names = args.models or (models.fast_subset() if args.fast else [m.name for m in models.ZOO])
    global TIME_PEERS
    TIME_PEERS = not args.fast
    if args.table_all:
        saved = saved_results([m.name for m in models.ZOO])
        dates = sorted(run["date"] for _, _, run in saved)
        write_table(args.table_all, [(m, c) for m, c, _ in saved], read_expected(), 0,
                    runs=(dates[0], dates[-1], [run["commit"] for _, _, run in saved]) if saved else None)
        print("%s: %d of %d models" % (args.table_all, len(saved), len(models.ZOO)))
        if args.write_expected:
            write_expected(read_expected(), [(m, c) for m, c, _ in saved])
        return 0
    if not args.no_make:
        make = subprocess.run([sys.executable, os.path.join(HERE, "make-zoo.py"), "--jobs", str(args.jobs)] + names,
                              stdout=sys.stderr)
        if make.returncode != 0:
            print("Bail out! make-zoo.py failed")
            return 1
    unmade = [n for n in names if not os.path.exists(os.path.join(ZOO, n, "manifest.json"))]
    if unmade:
        print("Bail out! not made yet (tests/python tests/zoo/make-zoo.py %s)" % " ".join(unmade))
        return 1
    expected = read_expected()
    workroot = tempfile.mkdtemp(prefix="graft-zoo-")
    results = []
    number = 0
    failed = 0
    commit = _graft_commit()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for manifest, cells in pool.map(lambda n: model_cells(args.graft_cli, n, workroot), names):
            results.append((manifest, cells))
            save_cells(manifest, cells, commit)
            for c in cells:
                number += 1
                desc = "%s %s %s" % c.key
                reason = expected.get(c.key)
                if c.status == "n/a":
                    print("ok %d - %s # SKIP %s" % (number, desc, c.detail[:200]))
                elif c.status == "pass" and reason is None:
                    print("ok %d - %s (%s)" % (number, desc, c.detail[:120]))
                elif c.status == "pass":
                    failed += 1
                    print("not ok %d - %s now passes: remove it from tests/zoo/expected-failures.txt" % (number, desc))
                elif reason is not None:
                    print("not ok %d - %s # TODO %s" % (number, desc, c.detail[:300]))
                else:
                    failed += 1
                    print("not ok %d - %s: %s" % (number, desc, c.detail[:500]))
                sys.stdout.flush()
    print("1..%d" % number)
    counts = collections.Counter(c.status for _, cells in results for c in cells)
    applicable = counts["pass"] + counts["fail"]
    print("# %d of %d applicable cells pass (%.1f %%), %d not applicable; %.0f s" %
          (counts["pass"], applicable, 100.0 * counts["pass"] / max(applicable, 1), counts["n/a"],
           time.perf_counter() - started))
    if args.write_expected:
        write_expected(expected, results)
    if args.table:
        write_table(args.table, results, expected, time.perf_counter() - started)
    shutil.rmtree(workroot, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
