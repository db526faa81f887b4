"""Checks a .pt2 that graft-cli convert made from a TorchScript archive:
torch.export.load reads it and ep.module()(x) equals torch.jit.load(ts)(x)
within 1e-4·max|ref|, for each set of inputs given (one .npy folder per
size: the export batch and another when a dim is dynamic).

usage: check-converted-pt2.py TS.pt PROGRAM.pt2 INPUT_DIR [INPUT_DIR…]
Prints one line per input set; exit 0 only if every set agrees."""
import os
import sys
import warnings

import numpy as np
import torch


def flatten(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flatten(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flatten(item)]
    if hasattr(value, "to_tuple"):
        return flatten(value.to_tuple())
    return []


def structure(value):
    """The nesting of a result, tensors and None as leaves: a dict's keys
    and a sequence's length must survive the conversion."""
    if isinstance(value, dict):
        return {key: structure(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [structure(item) for item in value]
    return "tensor" if isinstance(value, torch.Tensor) else repr(value)


def load_inputs(folder):
    names = sorted((n for n in os.listdir(folder) if n.endswith(".npy")), key=lambda n: int(n.split(".")[0]))
    return [torch.from_numpy(np.load(os.path.join(folder, n))) for n in names]


def main():
    ts_path, pt2_path, folders = sys.argv[1], sys.argv[2], sys.argv[3:]
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    ep = torch.export.load(pt2_path)
    program = ep.module()
    scripted = torch.jit.load(ts_path)
    scripted.eval()
    ok = True
    for folder in folders:
        inputs = load_inputs(folder)
        with torch.no_grad():
            ref_result = scripted(*inputs)
            got_result = program(*inputs)
        if structure(ref_result) != structure(got_result):
            print(f"{folder}: result {structure(got_result)}, TorchScript gives {structure(ref_result)}")
            ok = False
            continue
        ref, got = flatten(ref_result), flatten(got_result)
        if len(ref) != len(got):
            print(f"{folder}: {len(got)} outputs, TorchScript gives {len(ref)}")
            ok = False
            continue
        worst = 0.0
        for r, g in zip(ref, got):
            if r.shape != g.shape:
                print(f"{folder}: shape {tuple(g.shape)} where TorchScript gives {tuple(r.shape)}")
                ok = False
                break
            r, g = r.double(), g.double()
            scale = max(r.abs().max().item(), 1e-30) if r.numel() else 1.0
            error = (r - g).abs().max().item() / scale if r.numel() else 0.0
            worst = max(worst, error)
        else:
            agrees = worst <= 1e-4
            ok &= agrees
            print(f"{folder}: {'agrees' if agrees else 'DIFFERS'} (max error {worst:.2e} of max|ref|)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
