#!/usr/bin/env python3
"""Generates the ONNX backend conformance suite (the node and simple-model
cases of the pinned onnx wheel) into OUTDIR, once, and writes
OUTDIR/expected-counts.tsv: one line per case with
  relative/path/model.onnx <TAB> main-graph node count <TAB> recursive node count
as onnx.load() sees them. Later runs reuse the cache (OUTDIR/.stamp).

It also writes OUTDIR/expected-io.json: for each case, the names of the
main graph's inputs and outputs and its initializer count.

Usage: make-backend-suite.py OUTDIR
"""
import argparse
import fcntl
import json
import os
import shutil
import sys

STAMP_VERSION = "2"


def count_recursive(graph):
    total = 0
    for node in graph.node:
        total += 1
        for attr in node.attribute:
            if attr.HasField("g"):
                total += count_recursive(attr.g)
            for sub in attr.graphs:
                total += count_recursive(sub)
    return total


def generate(outdir):
    import onnx
    from onnx.backend.test import cmd_tools

    # Since onnx 1.15 `backend-test-tools generate-data` writes only the model
    # cases (the wheel ships no node data); its writer still lays out
    # OUTDIR/<kind>/<case>/, so the node cases are handed to it alongside.
    import onnx.backend.test.case.model as model_test
    import onnx.backend.test.case.node as node_test
    model_cases = model_test.collect_testcases() + node_test.collect_testcases(None)
    model_test.collect_testcases = lambda: model_cases
    # A suite cached by an older onnx has cases this one lacks, and its
    # expected-io.json describes those: start from an empty folder.
    for stale in ("node", "simple", "real", "expected-io.json"):
        path = os.path.join(outdir, stale)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    cmd_tools.generate_data(argparse.Namespace(output=outdir))

    lines = []
    for root, dirs, files in os.walk(outdir):
        dirs.sort()
        if "model.onnx" not in files:
            continue
        path = os.path.join(root, "model.onnx")
        model = onnx.load(path, load_external_data=False)
        rel = os.path.relpath(path, outdir)
        lines.append(f"{rel}\t{len(model.graph.node)}\t{count_recursive(model.graph)}\n")
    if not lines:
        sys.exit("make-backend-suite: the generator wrote no model.onnx files")
    with open(os.path.join(outdir, "expected-counts.tsv"), "w") as f:
        f.writelines(lines)


def write_io(outdir):
    """Written beside an existing suite without regenerating it (other
    tests may be reading the cases)."""
    import onnx

    io = {}
    for root, dirs, files in os.walk(outdir):
        dirs.sort()
        if "model.onnx" not in files:
            continue
        path = os.path.join(root, "model.onnx")
        graph = onnx.load(path, load_external_data=False).graph
        io[os.path.relpath(path, outdir)] = {
            "inputs": [v.name for v in graph.input],
            "outputs": [v.name for v in graph.output],
            "initializers": len(graph.initializer) + len(graph.sparse_initializer),
        }
    tmp = os.path.join(outdir, "expected-io.json.tmp")
    with open(tmp, "w") as f:
        json.dump(io, f, sort_keys=True)
    os.replace(tmp, os.path.join(outdir, "expected-io.json"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = os.path.abspath(sys.argv[1])
    os.makedirs(outdir, exist_ok=True)
    stamp = os.path.join(outdir, ".stamp")
    with open(os.path.join(outdir, ".lock"), "w") as lock:
        # Several tests may ask for the suite at once; one generates it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(stamp) as f:
                current = f.read().strip() == STAMP_VERSION
        except FileNotFoundError:
            current = False
        if not current:
            generate(outdir)
            with open(stamp, "w") as f:
                f.write(STAMP_VERSION + "\n")
        if not os.path.exists(os.path.join(outdir, "expected-io.json")):
            write_io(outdir)


if __name__ == "__main__":
    main()
