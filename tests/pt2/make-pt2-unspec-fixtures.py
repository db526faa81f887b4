#!/usr/bin/env python3
"""Programs torch 2.13 exported WITHOUT dynamic_shapes, so their batch is
specialized to 2, for tests/pt2/test-pt2-unspec.c (issue 34, point 2):
graft-cli edit --dynamic x:0=batch must free the batch, or refuse naming
the node that pins it. Cached by the digest of this script.

For each program NAME this writes into OUTDIR:
  NAME.pt2            torch.export.export(model, (x at batch 2,)) saved
  NAME.input.npy      x at batch 2
  NAME.input3.npy     x at batch 3, and
  NAME.eager3.npy     the eager model's output on it (the reference the
                      freed program must match, in torch and in Graft)

The programs: cnn_view (a CNN whose head flattens with x.view(x.shape[0], -1),
which the export bakes into view(2, -1)),
vit_block (an MViT-like block: a class token expanded to the batch,
attention reshaped to (B, N, heads, d), a per-sample pick through
arange(B), a zeros(B, ...) register), encoder_layer (an
nn.TransformerEncoderLayer with batch_first=True), and batch_mixing (a
head that merges the batch into its features, x.reshape(1, -1) before a
Linear sized for two samples: nothing can free that batch), and
vit_dynamic, the vit_block model exported with a dynamic batch in 1..32,
whose free dim (torch names it s77 or so) the edit renames.

Usage: make-pt2-unspec-fixtures.py OUTDIR
"""
import hashlib
import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
digest = hashlib.sha256(open(os.path.abspath(__file__), "rb").read()).hexdigest()
stamp = os.path.join(out, ".stamp")
if os.path.exists(stamp) and open(stamp).read() == digest:
    sys.exit(0)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


class CnnView(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        # Export bakes x.shape[0] into the view as the constant 2.
        return self.head(self.features(x).view(x.shape[0], -1))


class VitBlock(nn.Module):
    """Patches → tokens with a class token, one attention block written the
    MViT way, a per-sample pick of the most active token."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.patch = nn.Conv2d(3, dim, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.1)
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(2 * dim, 10)

    def forward(self, x):
        tokens = self.patch(x).flatten(2).transpose(1, 2)
        B, N, C = tokens.shape
        tokens = torch.cat([self.cls.expand(B, -1, -1), tokens], dim=1) + self.pos
        h = self.norm(tokens)
        qkv = self.qkv(h).reshape(B, N + 1, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attention = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        mixed = (attention.softmax(-1) @ v).transpose(1, 2).reshape(B, N + 1, C)
        tokens = tokens + self.proj(mixed)
        register = torch.zeros(B, 1, C)
        tokens = torch.cat([tokens, register], dim=1)
        picked = tokens[torch.arange(B), tokens.norm(dim=-1).argmax(-1)]
        return self.head(torch.cat([tokens[:, 0], picked], dim=-1))


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


class BatchMixing(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)).reshape(1, -1))


torch.manual_seed(0)
programs = {
    "cnn_view": (CnnView(), lambda b: torch.randn(b, 3, 16, 16)),
    "vit_block": (VitBlock(), lambda b: torch.randn(b, 3, 16, 16)),
    "encoder_layer": (EncoderLayer(), lambda b: torch.randn(b, 6, 32)),
    "batch_mixing": (BatchMixing(), lambda b: torch.randn(b, 8)),
}
programs["vit_dynamic"] = programs["vit_block"]
for name, (model, example) in programs.items():
    model.eval()
    x2, x3 = example(2), example(3)
    with torch.no_grad():
        dynamic = ({0: torch.export.Dim("batch", min=1, max=32)},) if name == "vit_dynamic" else None
        ep = torch.export.export(model, (x2,), dynamic_shapes=dynamic)
        torch.export.save(ep, os.path.join(out, name + ".pt2"))
        np.save(os.path.join(out, name + ".input.npy"), x2.numpy())
        np.save(os.path.join(out, name + ".input3.npy"), x3.numpy())
        if name != "batch_mixing":
            np.save(os.path.join(out, name + ".eager3.npy"), model(x3).numpy())

with open(stamp, "w") as f:
    f.write(digest)
