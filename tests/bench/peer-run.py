#!/usr/bin/env python3
"""Runs an ONNX model in one of Graft's speed peers, the way `make bench-zoo`
times them: loading apart from the runs, inputs by position from .npy files.

    tests/python peer-run.py RUNTIME MODEL [--input FILE.npy]... [-o DIR]
                 [--threads N] [--repeat N]

RUNTIME is one of
  ort            onnxruntime, CPU execution provider, all graph optimizations,
                 intra_op_num_threads N, sequential
  openvino-f32   OpenVINO's CPU plugin, INFERENCE_PRECISION_HINT f32,
                 latency hint, one stream, INFERENCE_NUM_THREADS N
  openvino       the same at the plugin's default precision (bf16 on CPUs
                 with AVX512_BF16 or AMX-BF16, f32 elsewhere)

Prints "load time: X ms", "precision: P" (OpenVINO's inference precision
after compiling), "median time per run: X ms" and "median CPU time per
run: X ms" (the process's, all threads) like graft-cli run. Each
output is written as DIR/K.npy (K its position).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np


def load_ort(path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]

    def run(arrays):
        return session.run(None, dict(zip(names, arrays)))
    return run, "f32"


def load_openvino(path, threads, f32):
    import openvino as ov
    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
    if f32:
        config["INFERENCE_PRECISION_HINT"] = "f32"
    compiled = core.compile_model(core.read_model(path), "CPU", config)
    request = compiled.create_infer_request()
    precision = compiled.get_property("INFERENCE_PRECISION_HINT").to_string()

    def run(arrays):
        result = request.infer(arrays)
        return [result[o] for o in compiled.outputs]
    return run, precision


def main():
    parser = argparse.ArgumentParser(prog="peer-run")
    parser.add_argument("runtime", choices=["ort", "openvino", "openvino-f32"])
    parser.add_argument("model")
    parser.add_argument("--input", "-i", action="append", default=[])
    parser.add_argument("-o", dest="out")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    arrays = [np.load(f) for f in args.input]
    start = time.perf_counter()
    try:
        if args.runtime == "ort":
            run, precision = load_ort(args.model, args.threads)
        else:
            run, precision = load_openvino(args.model, args.threads, args.runtime == "openvino-f32")
    except Exception as e:  # both raise their own exception types
        raise SystemExit("peer-run: %s: %s" % (args.runtime, str(e).strip().splitlines()[0] if str(e).strip() else e))
    load_ms = (time.perf_counter() - start) * 1e3

    times, cpu_times = [], []
    results = None
    try:
        for _ in range(args.repeat):
            start, cpu_start = time.perf_counter(), time.process_time()
            results = run(arrays)
            times.append((time.perf_counter() - start) * 1e3)
            cpu_times.append((time.process_time() - cpu_start) * 1e3)
    except Exception as e:
        raise SystemExit("peer-run: %s: %s" % (args.runtime, str(e).strip().splitlines()[0] if str(e).strip() else e))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for k, value in enumerate(results):
            np.save(os.path.join(args.out, "%d.npy" % k), np.asarray(value))
    print("load time: %.3f ms, first run %.3f ms" % (load_ms, times[0]))
    print("precision: %s" % precision)
    print("median time per run: %.3f ms over %d runs (%d threads)" % (statistics.median(times), args.repeat,
                                                                       args.threads))
    print("median CPU time per run: %.3f ms (all threads)" % statistics.median(cpu_times))


if __name__ == "__main__":
    sys.exit(main())
