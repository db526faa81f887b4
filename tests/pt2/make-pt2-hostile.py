#!/usr/bin/env python3
"""Hostile and large torch.export programs (.pt2) for tests/pt2/test-pt2-hostile.c (issue 41).

Everything starts from real torch.export.save archives made here:
  views.pt2             a module whose weights are views sharing storages:
                        a transposed parameter (strides [1, 4]), a slice
                        (storage offset 5) and a stride-0 expanded buffer;
                        views.input0.npy and views.output<i>.npy are
                        ep.module()(x), for a run that checks every element
  many-<N>.pt2          N small parameters (N = 100, 300, 1000, 3000), to
                        time loading against the number of weights
Then the attacker's variants, views.pt2 with one part rewritten:
  view-<case>.pt2       the weights config's view of one tensor replaced
                        (strides of 2^40 and -2^40, near 2^62, negative,
                        storage offsets of 2^62 and -1, stride-0 views of
                        4 GiB and 2^60 bytes)
  deep-program-<kind>.pt2, deep-config-<kind>.pt2
                        models/model.json or the weights config replaced by
                        100k nested arrays or objects: about 4 KB deflated
  million-nodes.pt2     a program of 2^20 nodes, deflated to a few MB

usage: make-pt2-hostile.py OUTDIR
"""
import hashlib
import json
import os
import sys
import zipfile

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
# Cached: the files are rewritten only when this script changes.
STAMP = os.path.join(OUT, ".stamp")
with open(__file__, "rb") as f:
    VERSION = hashlib.sha256(f.read()).hexdigest()
if os.path.exists(STAMP) and open(STAMP).read() == VERSION:
    sys.exit(0)

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)


def path(name):
    return os.path.join(OUT, name)


class Views(nn.Module):
    def __init__(self):
        super().__init__()
        base = torch.randn(3, 4)
        self.t = nn.Parameter(base.t())                                   # [4, 3], strides [1, 4]
        self.register_buffer("sl", base[1:, 1:])                          # [2, 3], offset 5, strides [4, 1]
        self.register_buffer("ex", torch.randn(3, 1).expand(3, 5))        # [3, 5], strides [1, 0]

    def forward(self, x):
        return x @ self.t + self.sl, self.ex * 2


class Many(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ps = nn.ParameterList([nn.Parameter(torch.randn(4)) for _ in range(n)])

    def forward(self, x):
        for p in self.ps:
            x = x + p
        return x


model = Views()
x = torch.randn(2, 4)
ep = torch.export.export(model, (x,))
torch.export.save(ep, path("views.pt2"))
np.save(path("views.input0.npy"), x.numpy())
for i, out in enumerate(ep.module()(x)):
    np.save(path(f"views.output{i}.npy"), out.detach().numpy())

for n in (100, 300, 1000, 3000):
    torch.export.save(torch.export.export(Many(n), (torch.randn(4),)), path(f"many-{n}.pt2"))


def rewrite(source, name, replace):
    """A copy of source with each record for which replace(record, data) returns bytes changed."""
    with zipfile.ZipFile(path(source)) as zin, zipfile.ZipFile(path(name), "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            new = replace(info.filename, data)
            if new is not None:
                zout.writestr(info.filename, new, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            else:
                zout.writestr(info, data)


def view_case(name, sizes, strides, offset, tensor="t"):
    def replace(record, data):
        if not record.endswith("_weights_config.json"):
            return None
        config = json.loads(data)
        meta = config["config"][tensor]["tensor_meta"]
        meta["sizes"] = [{"as_int": s} for s in sizes]
        meta["strides"] = [{"as_int": s} for s in strides]
        meta["storage_offset"] = {"as_int": offset}
        return json.dumps(config).encode()
    rewrite("views.pt2", f"view-{name}.pt2", replace)


# t's storage holds 12 float32 (48 bytes).
view_case("stride-2p40", [2, 2], [1 << 40, -(1 << 40)], 0)
view_case("stride-near-2p62", [4], [(1 << 62) - 1], 0)
view_case("stride-2p62-sum", [2, 2], [1 << 62, 1 << 62], 0)
view_case("stride-2p61-bytes", [2], [1 << 61], 0)
view_case("stride-negative", [3], [-1], 2)
view_case("offset-2p62", [1], [1], 1 << 62)
view_case("offset-2p60", [1], [1], 1 << 60)
view_case("offset-negative", [2], [1], -1)
view_case("expanded-4gib", [1 << 30], [0], 0)
view_case("expanded-2p60", [1 << 28, 1 << 30], [0, 0], 0)
view_case("past-storage", [4, 4], [4, 1], 0)


DEPTH = 100000


def deep_case(name, suffix, kind):
    text = ("[" * DEPTH + "]" * DEPTH) if kind == "arrays" else ('{"a":' * DEPTH + "0" + "}" * DEPTH)

    def replace(record, data):
        return text.encode() if record.endswith(suffix) else None
    rewrite("views.pt2", name, replace)


for kind in ("arrays", "objects"):
    deep_case(f"deep-program-{kind}.pt2", "models/model.json", kind)
    deep_case(f"deep-config-{kind}.pt2", "_weights_config.json", kind)


def million_nodes(record, data):
    """2^20 relu nodes in a chain, written as torch.export writes nodes."""
    if not record.endswith("models/model.json"):
        return None
    program = json.loads(data)
    graph = program["graph_module"]["graph"]
    nodes = []
    previous = "x"
    for i in range(1 << 20):
        nodes.append({"target": "torch.ops.aten.relu.default", "name": f"r{i}",
                      "inputs": [{"name": "self", "arg": {"as_tensor": {"name": previous}}, "kind": 1}],
                      "outputs": [{"as_tensor": {"name": f"r{i}"}}], "metadata": {}})
        previous = f"r{i}"
    graph["nodes"] = nodes
    return json.dumps(program, separators=(",", ":")).encode()


rewrite("views.pt2", "million-nodes.pt2", million_nodes)

with open(STAMP, "w") as f:
    f.write(VERSION)
