#!/usr/bin/env python3
"""Runs an ONNX model in onnxruntime (Python): the numeric and speed
reference for Graft's runtime.

    tests/python ort-run.py MODEL [--input NAME=FILE.npy]... [--random] [--seed N]
                 [--dim NAME=VALUE]... [-o DIR] [--threads N] [--repeat N]

An --input without NAME= feeds the model's inputs in order. Random inputs
are uniform in [-1, 1) (float32), seeded by --seed plus the input's index;
tests that compare runtimes feed both the same .npy files. Prints
"median time per run: X ms" like graft-cli run. Each output is written as
DIR/<name>.npy with characters outside [A-Za-z0-9._-] replaced by '_'.
"""
import argparse
import os
import re
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

NUMPY_OF_ORT = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(int16)": np.int16,
    "tensor(uint16)": np.uint16, "tensor(int32)": np.int32, "tensor(uint32)": np.uint32,
    "tensor(int64)": np.int64, "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_,
}


def output_file_name(name):
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return ("_" + safe[1:] if safe.startswith(".") else safe) + ".npy"


def random_input(meta, index, seed, dims):
    shape = []
    for d in meta.shape:
        if isinstance(d, int):
            shape.append(d)
        elif d in dims:
            shape.append(dims[d])
        else:
            raise SystemExit(f"ort-run: input '{meta.name}': give its symbolic dim '{d}' with --dim")
    dtype = NUMPY_OF_ORT.get(meta.type)
    if dtype is None:
        raise SystemExit(f"ort-run: input '{meta.name}': cannot make random {meta.type}")
    rng = np.random.default_rng(seed + index)
    return (rng.random(shape, dtype=np.float64) * 2 - 1).astype(dtype)


def main():
    parser = argparse.ArgumentParser(prog="ort-run")
    parser.add_argument("model")
    parser.add_argument("--input", "-i", action="append", default=[])
    parser.add_argument("--random", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dim", action="append", default=[])
    parser.add_argument("-o", dest="out")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        raise SystemExit(f"ort-run: {e}")

    dims = {}
    for d in args.dim:
        key, _, value = d.partition("=")
        dims[key] = int(value)
    given = [(s.split("=", 1) if "=" in s else (None, s)) for s in args.input]
    feeds = {}
    for i, meta in enumerate(session.get_inputs()):
        entry = next((g for g in given if g[0] == meta.name), None)
        if entry is None and i < len(given) and given[i][0] is None:
            entry = given[i]
        if entry is not None:
            feeds[meta.name] = np.load(entry[1])
        elif args.random:
            feeds[meta.name] = random_input(meta, i, args.seed, dims)
        else:
            raise SystemExit(f"ort-run: input '{meta.name}' was not given")

    times = []
    results = None
    try:
        for _ in range(args.repeat):
            start = time.perf_counter()
            results = session.run(None, feeds)
            times.append((time.perf_counter() - start) * 1e3)
    except Exception as e:
        raise SystemExit(f"ort-run: {e}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for meta, value in zip(session.get_outputs(), results):
            np.save(os.path.join(args.out, output_file_name(meta.name)), np.asarray(value))
    print(f"median time per run: {statistics.median(times):.3f} ms over {args.repeat} runs ({args.threads} threads)")


if __name__ == "__main__":
    main()
