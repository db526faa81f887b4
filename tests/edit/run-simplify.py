#!/usr/bin/env python3
"""`graft-cli edit --simplify` and its passes on PyTorch exports made here.

1. Real models: torchvision's ResNet-18 structure (tests/fixtures/vision_models.py)
   exported by the TorchScript exporter with its BatchNormalization nodes kept
   (training=PRESERVE on an eval model), and a BERT from a transformers config
   exported by torch.export's exporter (a symbolic batch; shape arithmetic).
   --simplify must exit 0, say it checked the result, leave fewer nodes, give a
   file onnx.checker accepts and whose outputs in onnxruntime equal the
   original's within 1e-5 of their largest magnitude; its node count is
   printed beside onnx-simplifier's.
2. A module with one occasion for every pass (Pad before Conv / AveragePool /
   MaxPool, BatchNorm and per-channel Mul/Add after Conv, a repeated Relu,
   no-op Reshape / Cast / Concat / Expand (the exporter itself drops a
   Transpose pair and a whole Slice), MatMul + Add of rank 2): each pass
   alone (--fold-pad, --fold-into-conv, --no-ops, --matmul-add-to-gemm,
   --merge-initializers, --dead-code) removes what it names, and onnxruntime
   agrees on its result; --simplify saved as a recipe replays to the same
   node count; --fold-max-bytes leaves larger results computed. TorchScript merges repeated ops itself, so --cse is checked on
   the BERT from torch.export, whose exporter does not.
3. The proof catches a wrong rewrite: a file whose value_info says an
   intermediate is float32 while it is float64 (a stale annotation) leads the
   no-op pass to drop a Cast that is not one. --simplify must refuse (exit 1,
   nothing written), naming the pass and the output; --no-verify saves it.

Usage: run-simplify.py GRAFT_CLI
Prints TAP.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx

from simplify_checks import edit, node_count, ops, same_outputs
from tap import plan, skip, tap

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ["GRAFT_BUILD_DIR"]
OUT = os.path.join(BUILD, "tests", "edit", "simplify-out")
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))


def onnxsim_count(path):
    try:
        import onnxsim
    except ImportError:
        return None
    simplified, ok = onnxsim.simplify(onnx.load(path))
    return len(simplified.graph.node) if ok else None


# --- fixtures ------------------------------------------------------------------------------


def export_resnet18(path):
    import torch
    import vision_models
    torch.manual_seed(0)
    model = vision_models.resnet18().eval()
    x = torch.randn(1, 3, 64, 64)
    torch.onnx.export(model, (x,), path, dynamo=False, training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False, input_names=["image"], output_names=["logits"])
    return {"image": np.random.default_rng(1).standard_normal((1, 3, 64, 64)).astype(np.float32)}


def export_bert(path):
    import torch
    import transformers
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=32)
    model = transformers.BertModel(config).eval()
    ids = torch.randint(0, 100, (2, 8))
    batch = torch.export.Dim("batch", min=1, max=16)
    torch.onnx.export(model, (ids,), path, dynamo=True, input_names=["input_ids"],
                      dynamic_shapes={"input_ids": {0: batch}}, optimize=False)
    return {"input_ids": np.random.default_rng(2).integers(0, 100, (3, 8)).astype(np.int64)}


def export_every_pass(path):
    import torch
    import torch.nn.functional as F

    class EveryPass(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3)
            self.bn = torch.nn.BatchNorm2d(8)
            self.conv2 = torch.nn.Conv2d(8, 8, 1)
            self.scale = torch.nn.Parameter(torch.rand(1, 8, 1, 1) + 0.5)
            self.shift = torch.nn.Parameter(torch.randn(1, 8, 1, 1))
            self.weight = torch.nn.Parameter(torch.randn(8 * 5 * 5, 5))
            self.bias = torch.nn.Parameter(torch.randn(5))

        def forward(self, x):
            y = self.bn(self.conv(F.pad(x, (1, 1, 1, 1))))
            y = self.conv2(y) * self.scale + self.shift
            y = y.relu()
            y = y.reshape(2, 8, 16, 16).transpose(2, 3).transpose(2, 3).float()
            y = torch.cat([y[:, :]], 1).expand(2, 8, 16, 16)
            y = F.max_pool2d(F.pad(y, (1, 1, 1, 1), value=float("-inf")), 2)
            y = F.avg_pool2d(F.pad(y, (0, 1, 0, 1)), 2)
            return y.flatten(1) @ self.weight + self.bias

    torch.manual_seed(0)
    model = EveryPass().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 16, 16)
    torch.onnx.export(model, (x,), path, dynamo=False, training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False, input_names=["x"], output_names=["y"])
    return {"x": np.random.default_rng(3).standard_normal((2, 3, 16, 16)).astype(np.float32)}


def write_stale_annotation(path):
    """z = Cast(Cast(x, double)², float) with value_info calling the double
    float32: the second Cast looks like a Cast to the same type (the model
    the Simplify… dialog's test refuses too)."""
    script = os.path.join(os.path.dirname(HERE), "gui", "make-stale-cast-model.py")
    subprocess.run([sys.executable, script, path], check=True)


# --- checks ------------------------------------------------------------------------------


def simplify_real(cli, name, export):
    src, dst = os.path.join(OUT, name + ".onnx"), os.path.join(OUT, name + "-simplified.onnx")
    try:
        feeds = export(src)
    except Exception as error:  # an exporter or library that cannot build the model here
        skip(f"{name}: the export failed here: {type(error).__name__}: {str(error)[:200]}")
        return
    result = edit(cli, src, dst, "--simplify")
    if not tap(result.returncode == 0 and "checked: the outputs equal" in result.stdout,
               f"{name}: --simplify exits 0 and checked its result by running it", result.stdout + result.stderr):
        return
    before, after = node_count(src), node_count(dst)
    peer = onnxsim_count(src)
    tap(after < before, f"{name}: --simplify leaves fewer nodes ({before} -> {after}; onnxsim 0.8.1: {peer})",
        result.stdout)
    try:
        onnx.checker.check_model(onnx.load(dst))
        checked = ""
    except onnx.checker.ValidationError as error:
        checked = str(error)
    tap(checked == "", f"{name}: onnx.checker accepts the simplified model", checked)
    difference = same_outputs(src, dst, feeds)
    tap(difference == "", f"{name}: onnxruntime gives the original's outputs on the simplified model", difference)
    return src, feeds


def cse_alone(cli, exported):
    if exported is None:
        skip("--cse: no BERT export")
        return
    src, feeds = exported
    folded, dst = os.path.join(OUT, "bert-folded.onnx"), os.path.join(OUT, "bert-cse.onnx")
    edit(cli, src, folded, "--fold")
    result = edit(cli, src, dst, "--fold", "--cse")
    tap(result.returncode == 0 and node_count(dst) < node_count(folded),
        f"bert-dynamo: --cse merges repeated nodes ({node_count(folded)} -> {node_count(dst)} after --fold)",
        result.stdout + result.stderr)
    difference = same_outputs(src, dst, feeds)
    tap(difference == "", "bert-dynamo: onnxruntime gives the original's outputs after --cse", difference)


PASSES = [
    # option, op counts that must fall (or rise: Gemm)
    ("--fold-pad", {"Pad": -3}),
    ("--fold-into-conv", {"BatchNormalization": -1, "Mul": -1, "Add": -1}),
    ("--no-ops", {"Reshape": -1, "Cast": -1, "Concat": -1, "Expand": -1}),
    ("--matmul-add-to-gemm", {"MatMul": -1, "Gemm": +1}),
]


def each_pass(cli):
    src = os.path.join(OUT, "every-pass.onnx")
    feeds = export_every_pass(src)
    before = ops(src)
    for option, changes in PASSES:
        dst = os.path.join(OUT, "every-pass" + option + ".onnx")
        result = edit(cli, src, dst, "--fold", option)
        if not tap(result.returncode == 0, f"every-pass: --fold {option} exits 0", result.stdout + result.stderr):
            continue
        folded = os.path.join(OUT, "every-pass-folded.onnx")
        edit(cli, src, folded, "--fold")
        reference = ops(folded)
        after = ops(dst)
        wrong = {op: (reference[op], after[op]) for op, change in changes.items()
                 if after[op] - reference[op] != change}
        tap(not wrong, f"{option} changes {changes} (after --fold: {dict(reference)})", f"got {dict(after)}")
        difference = same_outputs(src, dst, feeds)
        tap(difference == "", f"{option}: onnxruntime gives the original's outputs", difference)
    dst = os.path.join(OUT, "every-pass-simplified.onnx")
    recipe = os.path.join(OUT, "every-pass-simplify.json")
    result = edit(cli, src, dst, "--simplify", "--save-recipe", recipe)
    if tap(result.returncode == 0, "every-pass: --simplify exits 0", result.stdout + result.stderr):
        after = ops(dst)
        leftovers = {op: after[op] for op in ("Pad", "BatchNormalization", "Transpose", "Identity", "Cast", "Slice",
                                               "Concat", "Expand", "MatMul") if after[op]}
        tap(not leftovers, f"every-pass: --simplify leaves none of the ops its passes remove "
            f"({sum(before.values())} -> {sum(after.values())} nodes: {dict(after)})", str(leftovers))
        tap(same_outputs(src, dst, feeds) == "", "every-pass: onnxruntime gives the original's outputs after --simplify")
        with open(recipe) as f:
            steps = [step.get("edit") for step in json.load(f).get("steps", [])]
        replayed = os.path.join(OUT, "every-pass-replayed.onnx")
        again = edit(cli, src, replayed, "--recipe", recipe)
        tap(again.returncode == 0 and node_count(replayed) == node_count(dst),
            f"every-pass: the recipe {steps} replays to the same {node_count(dst)} nodes",
            again.stdout + again.stderr)
    bounded = os.path.join(OUT, "every-pass-bounded.onnx")
    result = edit(cli, src, bounded, "--simplify", "--fold-max-bytes", "16")
    tap(result.returncode == 0 and node_count(bounded) > node_count(dst) and same_outputs(src, bounded, feeds) == "",
        f"every-pass: --fold-max-bytes 16 leaves larger results computed ({node_count(bounded)} nodes, not "
        f"{node_count(dst)}), outputs unchanged", result.stdout + result.stderr)
    for option in ("--dead-code", "--merge-initializers"):
        result = edit(cli, src, dst, option)
        tap(result.returncode == 0 and same_outputs(src, dst, feeds) == "",
            f"every-pass: {option} alone exits 0 and keeps the outputs", result.stdout + result.stderr)


def export_shape_chains(path):
    """Shape-only chains as torch.export's exporter writes them around
    attention and normalisation (the zoo's GPT-NeoX, ConViT, ViT): a sum
    kept by Unsqueeze, Unsqueeze of Unsqueeze, Reshape then Unsqueeze /
    Squeeze, a Reshape to the shape it has, all with a dynamic batch."""
    import torch

    class ShapeChains(torch.nn.Module):
        def forward(self, x):
            total = x.sum(-1).unsqueeze(-1)                       # ReduceSum keepdims=0 -> Unsqueeze
            y = x / total
            steps = torch.arange(x.shape[1], dtype=x.dtype)
            ramp = steps.unsqueeze(1).unsqueeze(2)                # Unsqueeze -> Unsqueeze
            heads = y.reshape(-1, 4, 16).unsqueeze(1)             # Reshape -> Unsqueeze
            same = heads.squeeze(1).reshape(-1, 4, 16)            # a Reshape to its own shape
            flat = same.reshape(-1, 1, 64).squeeze(1)             # Reshape -> Squeeze
            return flat + ramp.reshape(1, -1)[:, :1], heads.sum(-1)

    x = torch.rand(3, 64) + 0.5
    torch.onnx.export(ShapeChains(), (x,), path, dynamo=True, input_names=["x"], output_names=["y", "h"],
                      dynamic_shapes=({0: torch.export.Dim("batch", min=2, max=64)},))
    return x


def shape_chains(cli):
    src = os.path.join(OUT, "shape-chains.onnx")
    export_shape_chains(src)
    dst = os.path.join(OUT, "shape-chains-simplified.onnx")
    result = edit(cli, src, dst, "--simplify")
    if not tap(result.returncode == 0, "shape-chains: --simplify exits 0 (checked at two batch sizes)",
               result.stdout + result.stderr):
        return
    before, after = ops(src), ops(dst)
    tap(after["Unsqueeze"] == 0 and after["Squeeze"] == 0 and after["Reshape"] < before["Reshape"],
        f"shape-chains: no Unsqueeze/Squeeze left, fewer Reshapes ({dict(before)} -> {dict(after)})")
    reduce_kept = [n for n in onnx.load(dst).graph.node if n.op_type == "ReduceSum"
                   and any(a.name == "keepdims" and a.i == 1 for a in n.attribute)]
    tap(len(reduce_kept) >= 1, "shape-chains: the ReduceSum keeps its dim instead of an Unsqueeze")
    for batch in (2, 5):
        feeds = {"x": np.random.default_rng(batch).random((batch, 64), dtype=np.float32) + 0.5}
        difference = same_outputs(src, dst, feeds)
        tap(difference == "", f"shape-chains: onnxruntime gives the original's outputs at batch {batch}", difference)


def wrong_rewrite_refused(cli):
    src, dst = os.path.join(OUT, "stale-annotation.onnx"), os.path.join(OUT, "stale-annotation-simplified.onnx")
    write_stale_annotation(src)
    result = edit(cli, src, dst, "--simplify")
    message = result.stdout + result.stderr
    tap(result.returncode == 1 and not os.path.exists(dst),
        "a rewrite that changes the outputs: --simplify exits 1 and writes nothing", message)
    tap("pass 'eliminate-no-ops'" in message and "output 'z'" in message,
        "the refusal names the pass (eliminate-no-ops) and the output (z)", message)
    result = edit(cli, src, dst, "--simplify", "--no-verify")
    tap(result.returncode == 0 and os.path.exists(dst) and "not checked" in result.stdout,
        "--no-verify skips the check and saves", result.stdout + result.stderr)


def given_inputs_and_sizes(cli, exported):
    """--input FILE.npy (as graft-cli run reads it) and --sizes on BERT's symbolic batch."""
    if exported is None:
        skip("--input / --sizes: no BERT export")
        return
    src, feeds = exported
    dst = os.path.join(OUT, "bert-given.onnx")
    npy = os.path.join(OUT, "bert-input-ids.npy")
    np.save(npy, feeds["input_ids"])
    result = edit(cli, src, dst, "--simplify", "--input", "input_ids=" + npy)
    tap(result.returncode == 0 and "at the given inputs (Graft's runtime)" in result.stdout,
        "bert-dynamo: --simplify --input input_ids=FILE.npy checks on the given inputs", result.stdout + result.stderr)
    result = edit(cli, src, dst, "--simplify", "--sizes", "1,5,7")
    tap(result.returncode == 0 and "=1 and at " in result.stdout and "=5 and at " in result.stdout
        and "=7 (random inputs" in result.stdout,
        "bert-dynamo: --simplify --sizes 1,5,7 checks at each size of the symbolic batch", result.stdout + result.stderr)
    result = edit(cli, src, dst, "--simplify", "--input", "no_such_input=" + npy)
    tap(result.returncode == 1 and "has no input 'no_such_input'" in result.stderr and not os.path.exists(dst),
        "bert-dynamo: --input naming no input is refused, naming it", result.stdout + result.stderr)


def body_nodes(path):
    """Nodes inside If/Loop/Scan bodies, at every depth."""
    def count(graph):
        total = 0
        for node in graph.node:
            for attribute in node.attribute:
                for body in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)):
                    total += len(body.node) + count(body)
        return total
    return count(onnx.load(path).graph)


def inside_bodies(cli):
    """A scripted module whose for and if become a Loop with an If inside
    (tests/fixtures/make-onnx-models.py control_flow): the passes run in the
    bodies too (the Loop body's no-op Cast and Identity go)."""
    models = os.path.join(os.path.dirname(HERE), "fixtures-generated", "models")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "fixtures", "make-onnx-models.py"), models,
                    "control_flow"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    src, dst = os.path.join(models, "control_flow.onnx"), os.path.join(OUT, "control-flow-simplified.onnx")
    result = edit(cli, src, dst, "--simplify")
    if not tap(result.returncode == 0 and "checked: the outputs equal" in result.stdout,
               "control-flow: --simplify exits 0 and checked its result", result.stdout + result.stderr):
        return
    before, after = body_nodes(src), body_nodes(dst)
    tap(after < before and not {"Identity", "Cast"} & set(op for op in body_ops(dst)),
        f"control-flow: the passes ran inside the Loop and If bodies ({before} -> {after} nodes there)",
        str(body_ops(dst)))
    feeds = {"x": np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32), "n": np.array(3, np.int64)}
    difference = same_outputs(src, dst, feeds)
    tap(difference == "", "control-flow: onnxruntime gives the original's outputs", difference)


def body_ops(path):
    ops_seen = []
    def walk(graph, inside):
        for node in graph.node:
            if inside:
                ops_seen.append(node.op_type)
            for attribute in node.attribute:
                for body in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)):
                    walk(body, True)
    walk(onnx.load(path).graph, False)
    return ops_seen


def main():
    cli = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    simplify_real(cli, "resnet18-bn", export_resnet18)
    bert = simplify_real(cli, "bert-dynamo", export_bert)
    cse_alone(cli, bert)
    given_inputs_and_sizes(cli, bert)
    each_pass(cli)
    shape_chains(cli)
    inside_bodies(cli)
    wrong_rewrite_refused(cli)
    plan()


if __name__ == "__main__":
    main()
