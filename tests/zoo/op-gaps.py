#!/usr/bin/env python3
"""Which ops the zoo's PyTorch files need that Graft's runtime or lowering lacks.

    tests/python tests/zoo/op-gaps.py GRAFT_CLI

For every TorchScript and .pt2 file of tests/fixtures-generated/zoo, asks
graft-cli lint (the runtime's table) and lint --target onnx (the lowering's)
which ops are unsupported, and prints each op with the models that need it,
most-needed first: the order in which ops are worth a kernel and a lowering.
"""
import collections
import json
import re
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "fixtures-generated", "zoo")


def unsupported(graft_cli, path, *extra):
    r = subprocess.run([graft_cli, "lint", "--json", path, *extra], capture_output=True, text=True)
    try:
        report = json.loads(r.stdout)
    except ValueError:
        return {"(lint failed: %s)" % r.stderr.strip()[:80]}
    items = report.get("diagnostics", []) if isinstance(report, dict) else report
    ops = set()
    for d in items:
        if d.get("rule") == "unsupported-op":
            m = re.search(r"\b(?:aten|prim|onnx|torch|_operator)(?:::|\.)[A-Za-z_0-9.]+", d.get("message", ""))
            ops.add(d.get("op") or (m.group(0) if m else d.get("message", "")[:60]))
    return ops


def main():
    graft_cli = sys.argv[1]
    runtime = collections.defaultdict(set)
    lowering = collections.defaultdict(set)
    for model in sorted(os.listdir(ZOO)):
        for artifact in ("traced.pt", "scripted.pt", "exported.pt2"):
            path = os.path.join(ZOO, model, artifact)
            if not os.path.exists(path):
                continue
            for op in unsupported(graft_cli, path):
                runtime[op].add("%s/%s" % (model, artifact))
            for op in unsupported(graft_cli, path, "--target", "onnx") - set(runtime):
                lowering[op].add("%s/%s" % (model, artifact))
    for title, table in (("runtime", runtime), ("lowering only", lowering)):
        print("## %s" % title)
        for op, users in sorted(table.items(), key=lambda kv: -len(kv[1])):
            print("%-40s %3d  %s" % (op, len(users), " ".join(sorted(users)[:6])))


if __name__ == "__main__":
    main()
