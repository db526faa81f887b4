#!/usr/bin/env python3
"""Programs for tests/pt2/test-pt2-save.c, made with the test venv's torch
2.13 and cached by the digest of this script and the scripts it runs:

  OUTDIR/programs/   tests/fixtures/make-pt2-fixtures.py's programs (a CNN
                     static and with a dynamic batch, a transformer encoder,
                     data-dependent shapes, buffer mutation, Whisper-tiny)
  OUTDIR/tv_resnet18.pt2, OUTDIR/hf_bert.pt2, OUTDIR/timm_efficientvit_b0.pt2
                     library models of tests/zoo/models.py (random weights;
                     EfficientViT's attention is a wrap_with_autocast body),
                     exported as the zoo does, with a dynamic batch
  OUTDIR/NAME.input.npy  an input at the export size, and
  OUTDIR/NAME.input3.npy at batch 3, for the runs of edited programs
  OUTDIR/cnn_static.input3.npy  the static CNN's input at batch 3, for the
                     program whose batch an edit frees

Usage: make-pt2-save-fixtures.py OUTDIR
"""
import hashlib
import inspect
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = [os.path.abspath(__file__), os.path.join(SOURCE, "tests/fixtures/make-pt2-fixtures.py"),
           os.path.join(SOURCE, "tests/zoo/models.py")]

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
digest = hashlib.sha256(b"".join(open(p, "rb").read() for p in SCRIPTS)).hexdigest()
stamp = os.path.join(out, ".stamp")
if os.path.exists(stamp) and open(stamp).read() == digest:
    sys.exit(0)

subprocess.run([sys.executable, SCRIPTS[1], os.path.join(out, "programs")], check=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE, "tests/zoo"))
import models  # noqa: E402

for name in ("tv_resnet18", "hf_bert", "timm_efficientvit_b0"):
    entry = models.BY_NAME[name]
    model = models.load(name)
    example = entry.example(2)
    batch = torch.export.Dim("batch", min=1, max=64)
    dynamic = tuple({axis: batch for axis in entry.dynamic_axes.get(i, [])} or None for i in range(len(example)))
    # forward(x, ...) takes one spec per argument; forward(*args) one for the tuple
    variadic = any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(model.forward).parameters.values())
    ep = torch.export.export(model, example, dynamic_shapes=(dynamic,) if variadic else dynamic, strict=False)
    torch.export.save(ep, os.path.join(out, name + ".pt2"))
    np.save(os.path.join(out, name + ".input.npy"), example[0].numpy())
    np.save(os.path.join(out, name + ".input3.npy"), entry.example(3)[0].numpy())

torch.manual_seed(3)
np.save(os.path.join(out, "cnn_static.input3.npy"), torch.randn(3, 3, 32, 32).numpy())

with open(stamp, "w") as f:
    f.write(digest)
