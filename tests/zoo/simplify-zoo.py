#!/usr/bin/env python3
"""Graft's simplifier against onnx-simplifier and onnxslim on the zoo's ONNX files.

    tests/python tests/zoo/simplify-zoo.py GRAFT_CLI [--zoo DIR] [--table docs/simplify.md]
        [--graft-args=ARGS] [--cache FILE.json [--only-cached]] [--jobs N] [MODEL...]

For every ONNX file of the zoo (ts.onnx from the TorchScript exporter,
dynamo.onnx from torch.export's), each simplifier runs in its own process,
timed: `graft-cli edit IN -o OUT --simplify`, onnxsim.simplify() (0.8.1)
and onnxslim.slim() (0.1.98). The result's main-graph node count is read
with onnx, and its outputs are run in onnxruntime on the zoo's own batch-2
inputs and compared with the original file's there: a result is "equal"
when every output is within 1e-5 of its largest magnitude
(|a - b| <= 1e-5 * max|a|, the issue's relative measure).

Peers' results are cached (--cache, keyed by file size and mtime), so a
second run only re-runs Graft (--only-cached: on the files cached so far). The markdown table (--table) lists per file
the three node counts, the times, and a verdict per simplifier; its head
says on how many files Graft's count is at most the smaller of the two
peers' and on which it is above the larger.
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
FILES = ["ts.onnx", "dynamo.onnx"]
SECONDS = 900
RTOL = 1e-5

PEER_SCRIPT = r"""
import sys, time, onnx
which, src, dst = sys.argv[1:4]
model = onnx.load(src)
start = time.perf_counter()
if which == "onnxsim":
    import onnxsim
    result, ok = onnxsim.simplify(model)
    if not ok:
        sys.exit("onnxsim: its own check failed")
else:
    import onnxslim
    result = onnxslim.slim(model)
seconds = time.perf_counter() - start
onnx.save(result, dst, save_as_external_data=result.ByteSize() > 2_000_000_000)
print(seconds)
"""

CHECK_SCRIPT = r"""
import json, os, sys
import numpy as np, onnx, onnxruntime as ort
original, result, inputs_dir = sys.argv[1:4]
def run(path):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, value in enumerate(session.get_inputs()):
        feeds[value.name] = np.load(os.path.join(inputs_dir, f"{i}.npy"))
    return session.run(None, feeds)
nodes = len(onnx.load(result, load_external_data=False).graph.node)
a, b = run(original), run(result)
worst = 0.0
for x, y in zip(a, b):
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape:
        print(json.dumps({"nodes": nodes, "error": f"shape {x.shape} became {y.shape}"})); sys.exit()
    if x.size == 0:
        continue
    if x.dtype.kind in "fc":
        scale = float(np.nanmax(np.abs(x))) if not np.isnan(x).all() else 1.0
        scale = scale or 1.0
        same_nan = np.isnan(x) == np.isnan(y)
        if not same_nan.all():
            worst = float("inf")
            continue
        finite = ~np.isnan(x)
        if finite.any():
            worst = max(worst, float(np.max(np.abs(x[finite].astype(np.float64) - y[finite].astype(np.float64)))) / scale)
    elif not np.array_equal(x, y):
        worst = max(worst, 1.0)
print(json.dumps({"nodes": nodes, "rel": worst, "outputs": len(a) == len(b)}))
"""


def python():
    return sys.executable


def node_count(path):
    import onnx
    return len(onnx.load(path, load_external_data=False).graph.node)


def check(original, result, inputs_dir):
    proc = subprocess.run([python(), "-c", CHECK_SCRIPT, original, result, inputs_dir],
                          capture_output=True, text=True, timeout=SECONDS)
    if proc.returncode != 0:
        return {"error": "onnxruntime: " + (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    if "error" not in answer and not answer["outputs"]:
        answer["error"] = "other number of outputs"
    return answer


def run_peer(which, src, work):
    dst = os.path.join(work, which + ".onnx")
    try:
        proc = subprocess.run([python(), "-c", PEER_SCRIPT, which, src, dst], capture_output=True, text=True,
                              timeout=SECONDS)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {SECONDS} s"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return {"seconds": float(proc.stdout.strip().splitlines()[-1]), "path": dst}


def run_graft(cli, args, src, work):
    dst = os.path.join(work, "graft.onnx")
    start = time.perf_counter()
    try:
        proc = subprocess.run([cli, "edit", src, "-o", dst] + args, capture_output=True, text=True, timeout=SECONDS)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {SECONDS} s"}
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "failed").splitlines()
        return {"error": lines[-1][:300], "seconds": seconds}
    return {"seconds": seconds, "path": dst}


def measure(entry, cli, graft_args, cache):
    model, artifact, path = entry
    inputs_dir = os.path.join(os.path.dirname(path), "inputs-b2")
    stat = os.stat(path)
    key = f"{model}/{artifact}"
    stamp = f"{stat.st_size}:{int(stat.st_mtime)}"
    row = {"model": model, "artifact": artifact, "original": node_count(path)}
    with tempfile.TemporaryDirectory(prefix="simplify-zoo-") as work:
        cached = cache.get(key)
        if cached is not None and cached.get("stamp") == stamp:
            row.update(cached["peers"])
        else:
            peers = {}
            for which in ("onnxsim", "onnxslim"):
                result = run_peer(which, path, work)
                if "path" in result:
                    result.update(check(path, result.pop("path"), inputs_dir))
                peers[which] = result
            cache[key] = {"stamp": stamp, "peers": peers}
            row.update(peers)
        result = run_graft(cli, graft_args, path, work)
        if "path" in result:
            result["fused"] = fused_ops(path, result["path"])
            result.update(check(path, result.pop("path"), inputs_dir))
        row["graft"] = result
    return row


FUSED_OPS = ["Gelu", "LayerNormalization", "RMSNormalization", "Attention"]


def fused_ops(original, result):
    """How many more of the opset's fused operators the result has: {op: n} (fewer, as when a
    LayerNormalization of constants folds, is no fusion: left out)."""
    import collections
    import onnx

    def count(path):
        return collections.Counter(n.op_type for n in onnx.load(path, load_external_data=False).graph.node)
    before, after = count(original), count(result)
    return {op: after[op] - before[op] for op in FUSED_OPS if after[op] > before[op]}


def cell_fused(result):
    return ", ".join(f"{op} +{n}" for op, n in result.get("fused", {}).items())


def cell_nodes(result):
    if "nodes" not in result:
        return "fails"
    mark = "" if good(result) else " ≠"
    return f"{result['nodes']}{mark}"


def cell_time(result):
    return f"{result['seconds']:.1f}" if "seconds" in result else "–"


def good(result):
    return "nodes" in result and result.get("error") is None and result.get("rel", 1) <= RTOL


def write_table(rows, path, graft_args):
    at_most_min = above_max = compared = 0
    lines = []
    problems = []
    for row in rows:
        g, s, l = row["graft"], row["onnxsim"], row["onnxslim"]
        peers = [p["nodes"] for p in (s, l) if good(p)]
        verdict = ""
        if good(g) and peers:
            compared += 1
            if g["nodes"] <= min(peers):
                at_most_min += 1
            else:
                verdict = f"> min ({min(peers)})"
            if g["nodes"] > max(peers):
                above_max += 1
                verdict = f"**> max ({max(peers)})**"
        for name, r in (("Graft", g), ("onnxsim", s), ("onnxslim", l)):
            if not good(r):
                problems.append(f"- {row['model']}/{row['artifact']}, {name}: "
                                + (r.get("error") or f"outputs differ (max relative {r.get('rel'):.2g})"))
        lines.append(f"| {row['model']} | {row['artifact']} | {row['original']} | {cell_nodes(g)} | {cell_nodes(s)} | "
                     f"{cell_nodes(l)} | {cell_time(g)} | {cell_time(s)} | {cell_time(l)} | {cell_fused(g)} | "
                     f"{verdict} |")
    times = [(r["graft"]["seconds"], r["onnxsim"]["seconds"]) for r in rows
             if good(r["graft"]) and good(r["onnxsim"])]
    ratio = ""
    if times:
        ratios = sorted(a / b for a, b in times)
        ratio = (f"Median time ratio Graft / onnxsim over the {len(times)} files both simplified: "
                 f"{ratios[len(ratios) // 2]:.2f} (Graft's time includes loading, checking its result in its own "
                 f"runtime and saving; the peers' only their simplify call).\n\n")
    with open(path, "w") as out:
        out.write("# Simplifying the zoo's ONNX exports: Graft, onnx-simplifier, onnxslim\n\n")
        out.write(f"Made by `tests/zoo/simplify-zoo.py` (`graft-cli edit IN -o OUT {' '.join(graft_args)}`, "
                  "onnxsim 0.8.1 `simplify()`, onnxslim 0.1.98 `slim()`) on every ONNX file of the zoo "
                  "(ts.onnx: TorchScript exporter; dynamo.onnx: torch.export's). Nodes are the main graph's; "
                  "≠ marks a result whose outputs differ from the original's in onnxruntime on the zoo's "
                  f"batch-2 inputs by more than {RTOL:g} of the output's largest magnitude. Times in seconds.\n\n")
        out.write(f"Graft's node count is at most the smaller of the two peers' on **{at_most_min} of {compared}** "
                  f"files where Graft and at least one peer gave a correct result, and above the larger on "
                  f"**{above_max}**.\n\n")
        out.write(ratio)
        fused = {}
        for row in rows:
            for op, n in row["graft"].get("fused", {}).items():
                fused[op] = fused.get(op, 0) + n
        files = sum(1 for row in rows if row["graft"].get("fused"))
        out.write("Fusions into the opset's own operators (the 'fused' column; each only where the file's opset has "
                  "the operator: LayerNormalization 17, Gelu 20, RMSNormalization and Attention 23, so at the zoo's "
                  f"opsets 17 and 20 RMSNorm and attention stay as they are): {files} files, "
                  + (", ".join(f"{op} +{n}" for op, n in fused.items()) or "none") + ".\n\n")
        out.write("With --cache, the peers' times are those of the run that filled the cache, not of this one: "
                  "the ratio is indicative, not a same-run measurement.\n\n")
        out.write("| model | file | nodes | Graft | onnxsim | onnxslim | Graft s | onnxsim s | onnxslim s | fused | |\n")
        out.write("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
        out.write("\n".join(lines) + "\n")
        if problems:
            out.write("\nFailures and divergent results:\n\n" + "\n".join(problems) + "\n")
    return at_most_min, above_max, compared


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cli")
    parser.add_argument("models", nargs="*")
    parser.add_argument("--zoo", default=os.path.join(SOURCE, "tests", "fixtures-generated", "zoo"))
    parser.add_argument("--table")
    parser.add_argument("--graft-args", default="--simplify")
    parser.add_argument("--cache", default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only-cached", action="store_true",
                        help="measure only the files whose peers' results are in the cache (re-running Graft alone)")
    args = parser.parse_args()
    graft_args = shlex.split(args.graft_args)
    cache = {}
    if args.cache and os.path.exists(args.cache):
        with open(args.cache) as f:
            cache = json.load(f)
    entries = []
    for model in sorted(os.listdir(args.zoo)):
        folder = os.path.join(args.zoo, model)
        if args.models and model not in args.models:
            continue
        if not os.path.exists(os.path.join(folder, "digest")) or not os.path.isdir(os.path.join(folder, "inputs-b2")):
            continue
        for artifact in FILES:
            if args.only_cached and f"{model}/{artifact}" not in cache:
                continue
            if os.path.exists(os.path.join(folder, artifact)):
                entries.append((model, artifact, os.path.join(folder, artifact)))
    rows = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for row in pool.map(lambda e: measure(e, args.cli, graft_args, cache), entries):
            rows.append(row)
            g = row["graft"]
            print(f"{row['model']:32} {row['artifact']:12} {row['original']:5} graft {cell_nodes(g):>8} "
                  f"onnxsim {cell_nodes(row['onnxsim']):>8} onnxslim {cell_nodes(row['onnxslim']):>8} "
                  f"{g.get('error') or ''}", flush=True)
            if args.cache:
                with open(args.cache, "w") as f:
                    json.dump(cache, f, indent=1)
    if args.table:
        at_most_min, above_max, compared = write_table(rows, args.table, graft_args)
        print(f"Graft <= min(peers) on {at_most_min} of {compared}; above max on {above_max}")


if __name__ == "__main__":
    main()
