#!/usr/bin/env python3
"""The 96-layer batch_first TransformerEncoder of issue 18, made dynamic.

Usage: run-encoder96.py GRAFT_CLI OUTDIR

Run by tests/bench/bench-dynamic-encoder96 (`make bench`). Exports the
model once (OUTDIR/.stamp), then for the batch alone and for the batch
and the sequence together: graft-cli edit (whose verification must say
"verified"), onnxruntime and graft-cli run at batch 4 / sequence 8 against
PyTorch's output. Prints one line per step with its time; exits 1 when
one fails.
"""
import os
import subprocess
import sys
import time

import numpy as np

STAMP_VERSION = "1"


def export(outdir):
    import importlib.util
    import warnings
    import torch

    spec = importlib.util.spec_from_file_location(
        "make_rewrite_fixtures", os.path.join(os.path.dirname(__file__), "..", "fixtures", "make-rewrite-fixtures.py"))
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    encoder = fixtures.make_issue18_encoder(96)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(encoder, (torch.randn(2, 16, 256),), os.path.join(outdir, "encoder96-b2.onnx"),
                          input_names=["x"], output_names=["y"], do_constant_folding=True, opset_version=14,
                          dynamo=False)
    for name, shape in (("b4", (4, 16, 256)), ("b4s8", (4, 8, 256))):
        x = torch.randn(*shape)
        with torch.no_grad():
            y = encoder(x)
        np.save(os.path.join(outdir, f"input_{name}.npy"), x.numpy())
        np.save(os.path.join(outdir, f"output_{name}.npy"), y.numpy())


def compare(path, reference):
    a, b = np.load(path), np.load(reference)
    if a.shape != b.shape:
        return False, f"shape {a.shape} vs {b.shape}"
    diff, limit = float(np.max(np.abs(a - b))), 1e-4 * float(np.max(np.abs(b)))
    return diff <= limit, f"max abs diff {diff:.3g}, limit {limit:.3g}"


def step(text, args):
    start = time.monotonic()
    result = subprocess.run(args, capture_output=True, text=True)
    return result, time.monotonic() - start


def main():
    cli, outdir = sys.argv[1], os.path.abspath(sys.argv[2])
    os.makedirs(outdir, exist_ok=True)
    stamp = os.path.join(outdir, ".stamp")
    if not os.path.exists(stamp) or open(stamp).read().strip() != STAMP_VERSION:
        start = time.monotonic()
        export(outdir)
        with open(stamp, "w") as f:
            f.write(STAMP_VERSION + "\n")
        print(f"export: {time.monotonic() - start:.1f} s")
    original = os.path.join(outdir, "encoder96-b2.onnx")
    ort = [sys.executable, os.path.join(os.path.dirname(__file__), "..", "runtime", "ort-run.py")]
    failed = False
    for label, dims, sample in (("batch", ["x:0=batch"], "b4"), ("batch and seq", ["x:0=batch", "x:1=seq"], "b4s8")):
        edited = os.path.join(outdir, f"encoder96-{sample}-dynamic.onnx")
        args = [cli, "edit", original, "-o", edited, "--overwrite"]
        for d in dims:
            args += ["--dynamic", d]
        result, seconds = step("edit", args)
        ok = result.returncode == 0 and "verified: " in result.stdout and "FAILED" not in result.stdout
        print(f"{'ok' if ok else 'FAILED'}: edit --dynamic {' '.join(dims)} and verify: {seconds:.1f} s")
        if not ok:
            print(result.stdout[-2000:] + result.stderr[-2000:])
            failed = True
            continue
        x = os.path.join(outdir, f"input_{sample}.npy")
        reference = os.path.join(outdir, f"output_{sample}.npy")
        for runner, command in (("onnxruntime", ort + [edited, "--input", f"x={x}", "-o"]),
                                ("graft-cli run", [cli, "run", edited, "--input", f"x={x}", "-o"])):
            out = os.path.join(outdir, f"{sample}-{runner.split()[0]}")
            result, seconds = step(runner, command + [out])
            ok, detail = (compare(os.path.join(out, "y.npy"), reference) if result.returncode == 0
                          else (False, result.stderr[-500:]))
            print(f"{'ok' if ok else 'FAILED'}: {label} dynamic, {runner} at {sample} vs PyTorch ({detail}): "
                  f"{seconds:.1f} s")
            failed = failed or not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
