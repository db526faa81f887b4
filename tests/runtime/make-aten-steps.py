"""Writes small modules as PyTorch files for test-aten-steps.c, with the
steps a traced, scripted or exported transformer has beyond its ONNX
export: reads of the input's sizes and lists of them (which the runtime
memoises by the input's shape), and contiguous, detach, eval dropout (and dropout_),
same-dtype to and whole-axis slices (which it passes on), beside what it
must run: a cast to another dtype, a slice of part of an axis, in-place
ops on the passed-on tensors, and (scripted) a list of sizes that
aten::append changes; and scripted checks of the input's shape (which
the runtime memoises) beside one of its values (which it runs); and a
scripted nn.GroupNorm, whose F.group_norm checks the product of the
input's sizes in a loop (memoised), beside a loop over the values and
one filling a list (which it runs).
OUT/steps/{traced.pt,scripted.pt,exported.pt2}, OUT/lists/scripted.pt,
OUT/checks/scripted.pt, OUT/tensor-lists/{traced.pt,scripted.pt} (lists
of tensors for einsum and cat, and unbind's), OUT/group-norm/scripted.pt,
each directory's
input x.npy and torch's output y.npy; in group-norm also other-x.npy and
other-y.npy (another shape), and failing-x.npy, an input failing the
check, with torch's message in failing-error.txt, and tall-x.npy, which
fails the module's own nested check.
Usage: make-aten-steps.py OUT"""
import os
import sys
from typing import List

import numpy as np
import torch
from torch import nn


class Steps(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        # x [2, 6, 16]
        b, n, c = x.shape
        h = self.proj(x).contiguous().view(b, n, 2, c // 2)
        h = nn.functional.dropout(h, 0.1, False).detach()
        h = nn.functional.dropout(h * 1.5, 0.1, False, inplace=True)
        h = h.to(torch.float32)[:, :]
        part = h[:, :, :, :4]
        wide = h.to(torch.float64).sum(-1).to(torch.float32)
        # an in-place op on a passed-on tensor whose source no step reads after
        t = (h * 2).contiguous()
        t.add_(1.0)
        # and on the graph input's (which must stay as the caller gave it)
        u = x.detach()
        u = u.mul(3.0)
        return t.reshape(b, n, c) + part.sum(-1, keepdim=True).reshape(b, n, 2).repeat(1, 1, 8) + \
            wide.repeat(1, 1, 8) + u


class Lists(nn.Module):
    def forward(self, x):
        # the list a later aten::append changes: built again every run
        sizes: List[int] = [x.size(0), x.size(1)]
        sizes.append(-1)
        return x.reshape(sizes) * 2.0


class Checks(nn.Module):
    def forward(self, x):
        # a check of the input's shape (and adaptive_avg_pool2d's of its
        # output size): its If takes the same branch while the shape stays
        if x.dim() != 4:
            raise ValueError("expected a 4-d input")
        # a check of the values: its If runs every time
        if bool(x.abs().sum() > 1e9):
            raise ValueError("input too large")
        # a check of the shape whose branch checks the values: runs too
        if x.size(1) == 6:
            if bool(x.abs().max() > 1e9):
                raise ValueError("an element too large")
        return nn.functional.adaptive_avg_pool2d(x, (2, 2)) * 2.0


class TensorLists(nn.Module):
    def forward(self, x):
        # x [2, 6, 16]: the lists of tensors a transformer gives einsum and
        # cat, and the one unbind gives
        a, b = x.unbind(0)
        s = torch.einsum("ij,kj->ik", a, b)
        return torch.cat([s, a @ b.t()], 1) * 2.0


class GroupNormLoops(nn.Module):
    def __init__(self):
        super().__init__()
        # groups of one channel: a batch of one 1x1 input fails F.group_norm's
        # check (the product of its sizes, a loop in scripted code)
        self.norm = nn.GroupNorm(4, 4)

    def forward(self, x):
        y = self.norm(x)
        # a check of the shape whose branch checks the shape further: the
        # same outer condition, and the inner one may differ
        if y.dim() == 4:
            if y.size(2) == 7:
                raise ValueError("an input of 7 rows")
        # a loop over the values: runs every time
        acc = y[:, 0]
        for i in range(y.size(1) - 1):
            acc = acc + y[:, i + 1]
        # a loop filling a list read after it: runs every time
        sizes: List[int] = []
        for d in y.shape:
            sizes.append(d)
        return y.reshape(sizes) * 2.0 + acc.unsqueeze(1)


def write(out, name, module, x, kinds):
    """OUT/NAME/{x,y}.npy and the module traced and/or scripted."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        np.save(os.path.join(d, "x.npy"), x.numpy())
        np.save(os.path.join(d, "y.npy"), module(x).numpy())
        if "traced" in kinds:
            torch.jit.save(torch.jit.trace(module, (x,), check_trace=False), os.path.join(d, "traced.pt"))
        if "scripted" in kinds:
            torch.jit.save(torch.jit.script(module), os.path.join(d, "scripted.pt"))


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(3))
    steps = Steps().eval()
    d = os.path.join(out, "steps")
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        np.save(os.path.join(d, "x.npy"), x.numpy())
        np.save(os.path.join(d, "y.npy"), steps(x).numpy())
        torch.jit.save(torch.jit.trace(steps, (x,), check_trace=False), os.path.join(d, "traced.pt"))
        torch.jit.save(torch.jit.script(steps), os.path.join(d, "scripted.pt"))
        torch.export.save(torch.export.export(steps, (x,), strict=False), os.path.join(d, "exported.pt2"))
    x4 = x.reshape(2, 6, 4, 4)
    write(out, "lists", Lists().eval(), x4, ["scripted"])
    write(out, "checks", Checks().eval(), x4, ["scripted"])
    write(out, "tensor-lists", TensorLists().eval(), x, ["traced", "scripted"])
    d = os.path.join(out, "group-norm")
    os.makedirs(d, exist_ok=True)
    norm = GroupNormLoops().eval()
    with torch.no_grad():
        norm.norm.weight.copy_(torch.tensor([0.5, 1.0, 1.5, 2.0]))
        norm.norm.bias.copy_(torch.tensor([0.1, -0.2, 0.3, -0.4]))
        x = torch.randn(2, 4, 3, 5, generator=torch.Generator().manual_seed(5))
        other = torch.randn(1, 4, 2, 3, generator=torch.Generator().manual_seed(6))
        np.save(os.path.join(d, "x.npy"), x.numpy())
        np.save(os.path.join(d, "y.npy"), norm(x).numpy())
        np.save(os.path.join(d, "other-x.npy"), other.numpy())
        np.save(os.path.join(d, "other-y.npy"), norm(other).numpy())
        one = torch.randn(1, 4, 1, 1)
        np.save(os.path.join(d, "failing-x.npy"), one.numpy())
        try:
            norm(one)
            raise SystemExit("a batch of one 1x1 input passed F.group_norm's check")
        except ValueError as e:
            with open(os.path.join(d, "failing-error.txt"), "w") as f:
                f.write(str(e))
        np.save(os.path.join(d, "tall-x.npy"), torch.randn(1, 4, 7, 2).numpy())
        torch.jit.save(torch.jit.script(norm), os.path.join(d, "scripted.pt"))


if __name__ == "__main__":
    main()
