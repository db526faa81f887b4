"""Checks a model graft-cli debug reduce saved:
    check-reduced.py SMALL.onnx [--inputs DIR] [--nonfinite | --differs REF_DIR]

onnx.checker with full_check (strict shape inference) must pass; then,
with --inputs (the .npy files of --save-inputs, named by input), the model
runs in onnxruntime and must fail the same way there: --nonfinite, an
output holds NaN or Inf; --differs, an output differs from REF_DIR's .npy
of the same name beyond rtol 1e-4, atol 1e-5. Prints the node names, one a
line."""
import os
import re
import sys

import numpy as np
import onnx


def safe_name(name):
    s = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return ("_" + s[1:] if s.startswith(".") else s)[:200]


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    if "--inputs" in args:
        import onnxruntime as ort
        folder = args[args.index("--inputs") + 1]
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feed = {i.name: np.load(os.path.join(folder, safe_name(i.name) + ".npy")) for i in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]
        outputs = dict(zip(names, session.run(names, feed)))
        if "--nonfinite" in args and not any(not np.isfinite(v).all() for v in outputs.values()):
            sys.exit(f"{path}: no output holds NaN or Inf in onnxruntime")
        if "--differs" in args:
            ref = args[args.index("--differs") + 1]
            if all(np.allclose(v, np.load(os.path.join(ref, safe_name(n) + ".npy")), rtol=1e-4, atol=1e-5)
                   for n, v in outputs.items()):
                sys.exit(f"{path}: every output agrees with {ref} in onnxruntime")
    for node in model.graph.node:
        print(node.name)


main()
