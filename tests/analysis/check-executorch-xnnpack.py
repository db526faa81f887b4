#!/usr/bin/env python3
"""graft-cli lint --target executorch-xnnpack against ExecuTorch's own
XNNPACK partitioner, on torch.export programs of zoo models.

Usage: check-executorch-xnnpack.py GRAFT_CLI SOURCE_DIR [MODEL...]

For each model of tests/zoo/models.py (random weights; a few, CPU is
scarce): torch.export.export → MODEL.pt2 (the file a user saves), which
Graft lints; the same program through
executorch.exir.to_edge_transform_and_lower(..., [XnnpackPartitioner()]),
whose delegates are the partitions and whose other call_function nodes
are what falls back. Graft's figures must equal ExecuTorch's: the
partition count, and the op packets left out. Graft reads the program as
saved (training IR: aten::conv2d, aten::linear); ExecuTorch reports the
edge dialect after its decompositions (aten::convolution): EDGE_NAMES maps
the first onto the second. Prints both sides' figures; exit 1 on any
disagreement, 77 (skip) when executorch is not installed.
"""
import json
import pathlib
import subprocess
import sys
import tempfile
import warnings

MODELS = ["tv_resnet18", "tv_mobilenet_v3_small", "hf_bert"]

# A training-IR op → the edge op to_edge makes of it, where the names differ.
EDGE_NAMES = {
    "aten::conv1d": "aten::convolution",
    "aten::conv2d": "aten::convolution",
    "aten::batch_norm": "aten::_native_batch_norm_legit_no_training",
    "aten::layer_norm": "aten::native_layer_norm",
    "aten::softmax": "aten::_softmax",
    "aten::view": "aten::view_copy",
    "aten::reshape": "aten::view_copy",
    "aten::flatten": "aten::view_copy",
    "aten::unsqueeze": "aten::unsqueeze_copy",
    "aten::squeeze": "aten::squeeze_copy",
    "aten::expand": "aten::expand_copy",
    "aten::permute": "aten::permute_copy",
    "aten::transpose": "aten::permute_copy",
    "aten::slice": "aten::slice_copy",
    "aten::select": "aten::select_copy",
    "aten::embedding": "aten::embedding",
    "aten::adaptive_avg_pool2d": "aten::mean",
    "aten::hardsigmoid": "aten::hardsigmoid",
    "aten::matmul": "aten::expand_copy",   # a batched matmul: expand_copy, view_copy, bmm; the expand stays out
    "aten::contiguous": None,   # gone after to_edge
    "aten::dropout": None,
}


# Ops to_edge creates that have no node in the saved program: where's
# scalar argument becomes a scalar_tensor; a dtype/memory-format copy
# (_to_dim_order_copy) appears where the program changes layout. Where
# ExecuTorch leaves them out, Graft has nothing to judge.
EDGE_ONLY = {"aten::scalar_tensor", "dim_order_ops::_to_dim_order_copy"}


def packet(target):
    """'aten::convolution' for EdgeOpOverload aten.convolution.default."""
    name = getattr(target, "_name", None) or getattr(target, "name", lambda: str(target))()
    name = str(name)
    if "::" in name:
        namespace, rest = name.split("::", 1)
    else:
        namespace, rest = "aten", name
    return f"{namespace}::{rest.split('.')[0]}"


def executorch_partitions(program):
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    edge = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
    graph = edge.exported_program().graph_module.graph
    delegates, left = 0, set()
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        name = getattr(node.target, "__name__", "")
        if name == "executorch_call_delegate":
            delegates += 1
        elif name != "getitem" and packet(node.target) not in EDGE_ONLY:
            left.add(packet(node.target))
    return delegates, left


def graft_partitions(cli, path):
    out = subprocess.run([cli, "lint", str(path), "--target", "executorch-xnnpack", "--json"], capture_output=True,
                         text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(f"graft-cli lint {path} failed: {out.stderr}")
    report = json.loads(out.stdout)
    left = set()
    for op in report["target"]["unsupported_ops"]:
        edge = EDGE_NAMES.get(op, op)
        if edge is not None:
            left.add(edge)
    return report["partitions"]["count"], left, report["target"]["summary"]


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    cli, source = sys.argv[1], pathlib.Path(sys.argv[2])
    names = sys.argv[3:] or MODELS
    try:
        import executorch  # noqa: F401
    except ImportError:
        print("executorch is not installed: skipped")
        sys.exit(77)
    warnings.simplefilter("ignore")
    sys.path.insert(0, str(source / "tests" / "zoo"))
    import torch
    import models

    failures = []
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            module = models.load(name)
            example = models.inputs(name, 1)
            program = torch.export.export(module, example)
            path = pathlib.Path(folder) / f"{name}.pt2"
            torch.export.save(program, str(path))
            graft_count, graft_left, summary = graft_partitions(cli, path)
            et_count, et_left = executorch_partitions(program)
            print(f"{name}: Graft {summary} (left out as edge ops: {sorted(graft_left)}); "
                  f"ExecuTorch {et_count} delegate(s), left out {sorted(et_left)}")
            if graft_count != et_count:
                failures.append(f"{name}: {graft_count} partitions, ExecuTorch's partitioner makes {et_count}")
            if graft_left != et_left:
                failures.append(f"{name}: only Graft leaves out {sorted(graft_left - et_left)}, "
                                f"only ExecuTorch {sorted(et_left - graft_left)}")
    for failure in failures:
        print("FAIL: " + failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
