#!/usr/bin/env python3
"""TorchScript archives for tests/pt2/test-pt2-convert.c (graft-cli convert
TS -o OUT.pt2), made with the test venv's torch 2.13 from library models of
tests/zoo/models.py (random weights) and cached by the digest of this
script and models.py:

  OUTDIR/NAME/traced.pt, OUTDIR/NAME/scripted.pt   torch.jit.trace / script
                     as the zoo makes them (tv_resnet18 both, hf_bert traced,
                     tv_mobilenet_v2 scripted; tv_vit_small scripted, whose
                     forward unpacks x.shape of its input; timm's DeiT scripted,
                     with forward(x, attn_mask: Optional[Tensor] = None);
                     torchvision's LRASPP scripted, whose backbone reads a
                     dict of strings and which returns a dict; timm's LeViT
                     scripted, which keeps a tensor in a dict attribute;
                     torchvision's GoogLeNet scripted, which returns None
                     beside its logits; torchvision's RAFT scripted, with
                     for-loops and an attribute set in forward)
  OUTDIR/NAME/inputs-b2/0.npy, inputs-b3/0.npy   inputs at batch 2 and 3
  OUTDIR/branchy/scripted.pt   a scripted module branching on its input's
                     values (if x.sum() > 0), which no fixed size decides:
                     torch.cond; inputs-b2 take the then branch, inputs-b3
                     the else branch
  OUTDIR/uneven/scripted.pt   the same whose branches return different
                     shapes, which torch.cond does not allow
  OUTDIR/whiley/scripted.pt   a scripted while loop on its input's values
                     (while x.abs().sum() < 100: x = …): while_loop;
                     inputs-b2 loop several times, inputs-b3 not at all
  OUTDIR/loopy/scripted.pt   a scripted module looping over its batch
                     (for i in range(x.size(0))), which a dynamic batch
                     cannot unroll

Usage: make-ts2pt2-fixtures.py OUTDIR
"""
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = [os.path.abspath(__file__), os.path.join(SOURCE, "tests/zoo/models.py")]

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
digest = hashlib.sha256(b"".join(open(p, "rb").read() for p in SCRIPTS)).hexdigest()
stamp = os.path.join(out, ".stamp")
if os.path.exists(stamp) and open(stamp).read() == digest:
    sys.exit(0)

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE, "tests/zoo"))
import models  # noqa: E402


def save_inputs(folder, batches, example_of):
    for batch in batches:
        os.makedirs(os.path.join(folder, "inputs-b%d" % batch), exist_ok=True)
        for i, tensor in enumerate(example_of(batch)):
            np.save(os.path.join(folder, "inputs-b%d" % batch, "%d.npy" % i), tensor.numpy())


for name, kinds in (("tv_resnet18", ("traced", "scripted")), ("hf_bert", ("traced",)),
                    ("tv_mobilenet_v2", ("scripted",)), ("tv_vit_small", ("scripted",)),
                    ("timm_deit_tiny_patch16_224", ("scripted",)), ("tv_lraspp_mobilenet", ("scripted",)),
                    ("timm_levit_128s", ("scripted",)), ("tv_googlenet", ("scripted",)),
                    ("tv_raft_small", ("scripted",))):
    torch.manual_seed(0)
    model = models.load(name)
    example = models.BY_NAME[name].example(2)
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    for kind in kinds:
        with torch.no_grad():
            module = (torch.jit.trace(model, example, check_trace=False, strict=False) if kind == "traced"
                      else torch.jit.script(model))
        torch.jit.save(module, os.path.join(folder, kind + ".pt"))
    save_inputs(folder, (2, 3), models.BY_NAME[name].example)


class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            return self.linear(x)
        return x - 1


class Uneven(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x[:1]
        return x


torch.manual_seed(0)
folder = os.path.join(out, "branchy")
os.makedirs(folder, exist_ok=True)
torch.jit.save(torch.jit.script(Branchy().eval()), os.path.join(folder, "scripted.pt"))
save_inputs(folder, (2, 3), lambda batch: ((1 if batch == 2 else -1) * torch.randn(batch, 4).abs(),))
folder = os.path.join(out, "uneven")
os.makedirs(folder, exist_ok=True)
torch.jit.save(torch.jit.script(Uneven().eval()), os.path.join(folder, "scripted.pt"))

class Whiley(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        while x.abs().sum() < 100:
            x = self.linear(x).tanh() + x * 2 + 0.1
        return x


torch.manual_seed(0)
folder = os.path.join(out, "whiley")
os.makedirs(folder, exist_ok=True)
torch.jit.save(torch.jit.script(Whiley().eval()), os.path.join(folder, "scripted.pt"))
save_inputs(folder, (2, 3), lambda batch: (torch.randn(batch, 4) * (0.01 if batch == 2 else 100),))


class Loopy(torch.nn.Module):
    def forward(self, x):
        total = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            total = total + x[i]
        return total


folder = os.path.join(out, "loopy")
os.makedirs(folder, exist_ok=True)
torch.jit.save(torch.jit.script(Loopy().eval()), os.path.join(folder, "scripted.pt"))

with open(stamp, "w") as f:
    f.write(digest)
