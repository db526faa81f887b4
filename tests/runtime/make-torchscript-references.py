#!/usr/bin/env python3
"""PyTorch reference outputs for the runtime's TorchScript tests.

Usage: make-torchscript-references.py FIXTURES_DIR OUTDIR

FIXTURES_DIR holds the .pt files of tests/fixtures/make-torchscript-fixtures.py
(run first, cached, by the same Python: one run per generation of PyTorch).
Cases FIXTURES_DIR/manifest.json lists as skipped get no references. For every case below it writes OUTDIR/<case>.in<i>.npy
(inputs, seeded) and OUTDIR/<case>.out<i>.npy (what torch.jit.load(...)
returns, tuples flattened, Python scalars as 0-d arrays). Kept while the
model's and this script's digest match the one in OUTDIR/<case>.done (not
by time: a fixture folder copied or linked from another clone keeps the
times of files that differ).
"""
import hashlib
import json
import os
import sys

import numpy as np
import torch

# case → list of inputs (shape tuple for a float32 tensor, or a Python float)
CASES = {
    "tiny_traced": [(2, 3)],
    "if_tensor_scripted": [(2, 4)],
    "while_loop_scripted": [(2, 4), 10.0],
    "resnet18_traced": [(2, 3, 224, 224)],
    "mobilenet_v3_small_traced": [(2, 3, 224, 224)],
    "googlenet_traced": [(2, 3, 224, 224)],
    "mobilenet_v2_traced": [(2, 3, 224, 224)],
}


def flatten(value):
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(flatten(v))
        return out
    if isinstance(value, torch.Tensor):
        return [value.detach().numpy()]
    if isinstance(value, bool):
        return [np.array(value)]
    if isinstance(value, int):
        return [np.array(value, dtype=np.int64)]
    if isinstance(value, float):
        return [np.array(value, dtype=np.float64)]
    raise TypeError("cannot save %r" % type(value))


def save(path, array):
    """np.save through a new file renamed into place: a test reading the
    references meanwhile, or a clone whose fixture folder is hard-linked to
    this one, never sees a half-written or another clone's file."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


def main():
    fixtures, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    with open(__file__, "rb") as f:
        script_digest = hashlib.sha256(f.read()).hexdigest()
    torch.manual_seed(0)
    with open(os.path.join(fixtures, "manifest.json")) as f:
        skipped = json.load(f)["skipped"]
    for case, specs in CASES.items():
        if case in skipped:
            continue
        model_path = os.path.join(fixtures, case + ".pt")
        stamp = os.path.join(outdir, case + ".done")
        digest = hashlib.sha256(script_digest.encode())
        with open(model_path, "rb") as f:
            digest.update(f.read())
        digest = digest.hexdigest()
        if os.path.exists(stamp):
            with open(stamp) as f:
                if f.read().split()[1:] == [digest]:
                    continue
        model = torch.jit.load(model_path).eval()
        rng = np.random.default_rng(1)
        args = []
        for i, spec in enumerate(specs):
            if isinstance(spec, tuple):
                x = rng.standard_normal(spec).astype(np.float32)
                save(os.path.join(outdir, "%s.in%d.npy" % (case, i)), x)
                args.append(torch.from_numpy(x))
            else:
                save(os.path.join(outdir, "%s.in%d.npy" % (case, i)), np.array(spec, dtype=np.float64))
                args.append(spec)
        with torch.no_grad():
            outputs = flatten(model(*args))
        for i, out in enumerate(outputs):
            save(os.path.join(outdir, "%s.out%d.npy" % (case, i)), np.ascontiguousarray(out))
        tmp = "%s.%d.tmp" % (stamp, os.getpid())
        with open(tmp, "w") as f:
            f.write("%d %s\n" % (len(outputs), digest))
        os.replace(tmp, stamp)


if __name__ == "__main__":
    main()
