"""Checks what the Replace Pattern dialog saved: the recipe the window
wrote, replayed by `graft-cli edit ORIGINAL -o REPLAYED --recipe RECIPE`,
gives the same graph as the model the window saved (nodes with their ops,
inputs, outputs and attributes; initializers; opset imports), both pass
onnx.checker's full check, and with --run the saved model gives, in
onnxruntime, the original's outputs on the same random input, and Graft's
runtime agrees (check-edited-model.py). Prints the replayed graph's op
types; exits non-zero with the reason.

  tests/python tests/gui/check-pattern-replay.py ORIGINAL SAVED RECIPE GRAFT_CLI [--run]"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort


def describe(model):
    nodes = [(n.name, n.domain or "ai.onnx", n.op_type, list(n.input), list(n.output),
              sorted(onnx.helper.printable_attribute(a) for a in n.attribute)) for n in model.graph.node]
    initializers = sorted(i.name for i in model.graph.initializer)
    opsets = sorted((o.domain or "ai.onnx", o.version) for o in model.opset_import)
    return nodes, initializers, opsets


def run(path, feeds):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


def main():
    original, saved, recipe, graft_cli = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as work:
        replayed = os.path.join(work, "replayed.onnx")
        subprocess.run([graft_cli, "edit", original, "-o", replayed, "--recipe", recipe], check=True,
                       stdout=subprocess.DEVNULL)
        for path in (saved, replayed):
            onnx.checker.check_model(onnx.load(path), full_check=True)
        got, want = describe(onnx.load(replayed)), describe(onnx.load(saved))
        if got != want:
            for a, b in zip(got[0], want[0]):
                if a != b:
                    print(f"replayed {a}\n   saved {b}", file=sys.stderr)
            sys.exit(f"the recipe replays to another graph ({len(got[0])} nodes, the window saved {len(want[0])})")
    if "--run" in sys.argv[5:]:
        model = onnx.load(original)
        value = model.graph.input[0]
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds = {value.name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
        for a, b in zip(run(saved, feeds), run(original, feeds)):
            if not np.allclose(a, b, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(b)))):
                sys.exit(f"onnxruntime on the saved model differs from the original by {np.max(np.abs(a - b))}")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-edited-model.py")
        subprocess.run([sys.executable, script, saved, graft_cli], check=True, stdout=subprocess.DEVNULL)
    print(" ".join(n[2] for n in got[0]))


if __name__ == "__main__":
    main()
