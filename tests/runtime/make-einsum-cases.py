#!/usr/bin/env python3
"""Einsum models and onnxruntime's outputs for tests/runtime/test-einsum.c.

    tests/python make-einsum-cases.py DIR

Writes DIR/cases.txt (one line per case: NAME EQUATION N_INPUTS) and for each
case DIR/NAME.onnx (one Einsum node, opset 17), DIR/NAME/inK.npy (uniform in
[-1, 1), or small integers) and DIR/NAME/out.npy (onnxruntime's output, which
must also equal numpy.einsum's in float64 to 1e-5 of its largest magnitude).
The cases: the equations real models use (SAM's relative positions, Swin
and attention products), the spec's own kinds (transpose, diagonal, trace,
sums, outer products, several operands, implicit output, '...' with
broadcasting; onnxruntime needs as many axes under each), and random equations (seeded) mixing batch, contracted,
repeated and summed labels with ellipses.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

FIXED = [
    ("sam-rel-h", "bhwc,hkc->bhwk", [(6, 5, 7, 8), (5, 9, 8)]),
    ("sam-rel-w", "bhwc,wkc->bhwk", [(6, 5, 7, 8), (7, 9, 8)]),
    # enough rows for the products read in place: a loop around rows of w,
    # and rows of b·h strided around a loop over w
    ("sam-rel-h-in-place", "bhwc,hkc->bhwk", [(3, 4, 20, 8), (4, 9, 8)]),
    ("sam-rel-w-in-place", "bhwc,wkc->bhwk", [(4, 5, 6, 8), (6, 9, 8)]),
    ("rows-between", "mbk,bkn->mbn", [(20, 3, 8), (3, 8, 5)]),
    ("matmul", "ij,jk->ik", [(33, 17), (17, 40)]),
    ("batched-matmul", "bij,bjk->bik", [(3, 20, 24), (3, 24, 18)]),
    ("matmul-bt", "bij,bkj->bik", [(3, 20, 24), (3, 18, 24)]),
    ("large-split", "bij,bkj->bik", [(2, 70, 64), (2, 80, 64)]),   # split over the threads
    ("large-permuted", "bkj,jbi->kbi", [(3, 40, 96), (96, 3, 80)]),
    ("attention-scores", "bhqd,bhkd->bhqk", [(2, 3, 10, 16), (2, 3, 12, 16)]),
    ("attention-values", "bhqk,bhkd->bqhd", [(2, 3, 10, 12), (2, 3, 12, 16)]),
    ("transpose", "ij->ji", [(5, 7)]),
    ("permute", "abcd->dbca", [(2, 3, 4, 5)]),
    ("diagonal", "ii->i", [(6, 6)]),
    ("trace", "ii", [(6, 6)]),
    ("sum-all", "ij->", [(4, 5)]),
    ("sum-axis", "ijk->ik", [(4, 5, 6)]),
    ("dot", "i,i->", [(50,)] * 2),
    ("outer", "i,j->ij", [(5,), (7,)]),
    ("hadamard", "ij,ij->ij", [(4, 5), (4, 5)]),
    ("three-operands", "abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("implicit", "ij,jk", [(3, 4), (4, 5)]),
    ("implicit-sorted", "ba,ca", [(3, 4), (5, 4)]),
    ("repeated-summed", "iij,jk->ik", [(4, 4, 5), (5, 3)]),
    ("diagonal-kept", "bii,bij->bi", [(2, 4, 4), (2, 4, 6)]),
    ("ellipsis-matmul", "...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
    ("ellipsis-broadcast", "...ij,...jk->...ik", [(2, 1, 4, 5), (1, 3, 5, 6)]),
    ("ellipsis-sum", "...i,...i->...", [(2, 3, 7), (2, 3, 7)]),
    ("ellipsis-middle", "i...j,j...k->...ik", [(3, 2, 4), (4, 2, 5)]),
    ("ellipsis-implicit", "...ij,jk", [(2, 3, 4), (4, 5)]),
    ("scalar-operand", ",ij->ij", [(), (3, 4)]),
    ("zero-size", "ij,jk->ik", [(0, 3), (3, 4)]),
    ("empty-contraction", "ij,jk->ik", [(2, 0), (0, 4)]),
]


def random_case(rng, index):
    letters = list("abcdefgh")
    sizes = {l: int(rng.integers(1, 6)) for l in letters}
    n_ops = int(rng.integers(1, 4))
    use_ellipsis = rng.random() < 0.35
    ellipsis_dims = [int(rng.integers(2, 4)) for _ in range(int(rng.integers(1, 3)))] if use_ellipsis else []
    terms, shapes, used = [], [], []
    for _ in range(n_ops):
        k = int(rng.integers(1, 4))
        labels = list(rng.choice(letters[:6], size=k, replace=False))
        if rng.random() < 0.2:
            labels.insert(int(rng.integers(0, len(labels) + 1)), labels[0])   # a diagonal
        shape = [sizes[l] for l in labels]
        term = "".join(labels)
        if use_ellipsis and rng.random() < 0.8:
            # onnxruntime wants the same number of axes under every ellipsis
            dims = [1 if rng.random() < 0.3 else d for d in ellipsis_dims]    # broadcasting
            at = int(rng.integers(0, len(labels) + 1))
            term = "".join(labels[:at]) + "..." + "".join(labels[at:])
            shape = shape[:at] + dims + shape[at:]
        terms.append(term)
        shapes.append(tuple(shape))
        used += labels
    distinct = sorted(set(used))
    if rng.random() < 0.75:
        out = list(rng.choice(distinct, size=int(rng.integers(0, len(distinct) + 1)), replace=False))
        out_text = "".join(out)
        if use_ellipsis and any("..." in t for t in terms):
            at = int(rng.integers(0, len(out) + 1))
            out_text = "".join(out[:at]) + "..." + "".join(out[at:])
        equation = ",".join(terms) + "->" + out_text
    else:
        equation = ",".join(terms)
    return ("random-%02d" % index, equation, shapes)


def make_model(equation, shapes, elem):
    inputs = [helper.make_tensor_value_info("in%d" % k, elem, None) for k in range(len(shapes))]
    node = helper.make_node("Einsum", [i.name for i in inputs], ["out"], equation=equation)
    graph = helper.make_graph([node], "einsum", inputs, [helper.make_tensor_value_info("out", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def values(rng, shape, dtype):
    if np.issubdtype(dtype, np.integer):
        return np.asarray(rng.integers(-3, 4, size=shape), dtype=dtype)
    return np.asarray(rng.random(shape) * 2 - 1, dtype=dtype)


def try_case(folder, name, equation, shapes, dtype, rng):
    elem = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int32: TensorProto.INT32}[dtype]
    model = make_model(equation, shapes, elem)
    arrays = [values(rng, s, dtype) for s in shapes]
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        got = session.run(None, {"in%d" % k: a for k, a in enumerate(arrays)})[0]
    except Exception as e:  # onnxruntime's own exception types
        return "onnxruntime: %s" % str(e).splitlines()[0]
    want = np.einsum(equation, *[a.astype(np.float64) for a in arrays])
    if want.shape != got.shape:
        return "onnxruntime's shape %s, numpy's %s" % (got.shape, want.shape)
    if want.size and np.abs(want - got).max() > 1e-5 * max(np.abs(want).max(), 1.0):
        return "onnxruntime differs from numpy by %g" % np.abs(want - got).max()
    onnx.save(model, os.path.join(folder, name + ".onnx"))
    os.makedirs(os.path.join(folder, name), exist_ok=True)
    for k, a in enumerate(arrays):
        np.save(os.path.join(folder, name, "in%d.npy" % k), a)
    np.save(os.path.join(folder, name, "out.npy"), got)
    return None


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(20251206)
    lines = []
    cases = [(n, e, s, np.float32) for n, e, s in FIXED]
    cases += [("double-" + n, e, s, np.float64) for n, e, s in FIXED[:3]]
    cases += [("int32-" + n, e, s, np.int32) for n, e, s in FIXED[:3]]
    for name, equation, shapes, dtype in cases:
        why = try_case(folder, name, equation, shapes, dtype, rng)
        if why:
            sys.exit("make-einsum-cases: %s (%s): %s" % (name, equation, why))
        lines.append("%s %s %d" % (name, equation.replace(" ", ""), len(shapes)))
    made = attempts = 0
    while made < 60 and attempts < 1000:
        attempts += 1
        name, equation, shapes = random_case(rng, made)
        # onnxruntime refuses some valid equations; those are drawn again
        if try_case(folder, name, equation, shapes, np.float32, rng) is None:
            lines.append("%s %s %d" % (name, equation, len(shapes)))
            made += 1
    with open(os.path.join(folder, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
