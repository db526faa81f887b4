#!/usr/bin/env python3
"""ExecuTorch programs (.pte) in Graft, against ExecuTorch's own runtime.

Usage: check-pte.py GRAFT_CLI SOURCE_DIR

Fixtures are made here with the executorch package (torch.export.export →
to_edge → to_executorch, no delegate) and cached by this script's digest
under tests/fixtures-generated/pte/: a small CNN (conv, batch norm, pool,
linear), an MLP, a block with view/permute/cat/softmax/layer_norm, the
zoo's ResNet-18 (tests/zoo/models.py, random weights), the CNN written
again with its constants inline in the flatbuffer (the constant_buffer of
files before executorch 0.4), an MLP lowered to XNNPACK, a program
with aten::erfinv, which the portable kernels lack, and one exported with a
dynamic batch (bounded by 16, run at 3); the CNN's torch.export program is
kept as cnn.pt2 for graft-cli diff against its .pte; a buffer updated in
place, with its initial value (InitializedMutableBufferPass: a mutable
data segment) and without.

For each program: graft-cli info --json lists the operators to_edge left
(convolution.out as aten::_convolution, view_copy.out as aten::view…);
graft-cli run equals executorch.runtime's outputs within 1e-4·max|ref|,
and so does onnxruntime on graft-cli convert's ONNX file (onnx.checker
full check);
the delegated one shows one delegate node (backend id, payload size) and
run refuses it naming the backend; lint names aten::erfinv.out as outside
the portable set and nothing else. Exit 77 (skip) without executorch.
"""
import hashlib
import json
import os
import subprocess
import sys
import warnings

warnings.filterwarnings("ignore")
try:
    import executorch  # noqa: F401
    from executorch.exir import to_edge, to_edge_transform_and_lower
    from executorch.runtime import Runtime
except Exception as e:  # noqa: BLE001
    print(f"SKIP: executorch does not import ({e})")
    sys.exit(77)

import numpy as np  # noqa: E402
import torch  # noqa: E402

GRAFT_CLI, SOURCE = sys.argv[1], sys.argv[2]
OUT = os.path.join(SOURCE, "tests/fixtures-generated/pte")
failures = []


def check(condition, message):
    print(("ok: " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = torch.nn.functional.max_pool2d(y, 2)
        y = torch.nn.functional.hardtanh(self.conv2(y))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(12, 32)
        self.b = torch.nn.Linear(32, 7)

    def forward(self, x):
        return torch.sigmoid(self.b(torch.nn.functional.gelu(self.a(x)))) * 2 - 1


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.norm = torch.nn.LayerNorm(16)
        self.out = torch.nn.Linear(16, 16)

    def forward(self, x, extra):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, 4, 4).permute(2, 0, 3, 1, 4)
        attention = torch.softmax(q @ k.transpose(-1, -2) / 2.0, dim=-1)
        y = (attention @ v).permute(0, 2, 1, 3).reshape(b, t, c)
        return torch.cat([x + self.out(y), extra], dim=1).mean(dim=1)


class DynamicBatch(torch.nn.Module):
    """Sizes computed at run time: aten::sym_size.int, executorch_prim::
    et_view with a size list built from it."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 6)

    def forward(self, x):
        b = x.shape[0]
        y = self.fc(x).view(b, 2, 3)
        return torch.softmax(y, -1).reshape(b, -1) * 2


class Accumulator(torch.nn.Module):
    """A buffer updated in place (aten::copy_ back into it)."""
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.ones(3) * 2)

    def forward(self, x):
        self.total.add_(x)
        return self.total * 3


class NonPortable(torch.nn.Module):
    def forward(self, x):
        return torch.erfinv(x.clamp(-0.5, 0.5)) + 1


def zoo_resnet18():
    sys.path.insert(0, os.path.join(SOURCE, "tests/zoo"))
    import models
    return models.load("tv_resnet18"), models.BY_NAME["tv_resnet18"].example(1)


def programs():
    torch.manual_seed(0)
    cnn = Cnn().eval()
    with torch.no_grad():   # running statistics that are not the identity
        cnn.bn.running_mean.uniform_(-1, 1)
        cnn.bn.running_var.uniform_(0.5, 2)
    yield "cnn", cnn, (torch.randn(2, 3, 16, 16),), None
    yield "mlp", Mlp().eval(), (torch.randn(4, 12),), None
    yield "block", Block().eval(), (torch.randn(2, 6, 16), torch.randn(2, 3, 16)), None
    resnet, example = zoo_resnet18()
    yield "resnet18", resnet.eval(), tuple(example), None
    yield "mlp_xnnpack", Mlp().eval(), (torch.randn(4, 12),), "xnnpack"
    yield "nonportable", NonPortable().eval(), (torch.randn(3, 5),), "keep erfinv"
    yield "dynamic", DynamicBatch().eval(), (torch.randn(4, 8),), "batch up to 16"
    yield "buffer", Accumulator(), (torch.randn(3),), "initial buffer"
    yield "buffer_uninitialized", Accumulator(), (torch.randn(3),), None


def write_inline_constants(source, target):
    """The program again with its constants in Program.constant_buffer
    (the layout before executorch 0.4) and no segments."""
    from executorch.exir._serialize._program import _program_to_flatbuffer, deserialize_pte_binary
    pte = deserialize_pte_binary(open(source, "rb").read())
    program = pte.program
    assert len(program.constant_buffer) > 1 and not program.segments
    program.constant_segment.offsets = []
    with open(target, "wb") as f:
        f.write(_program_to_flatbuffer(program).data)


def make_fixtures():
    digest = hashlib.sha256(open(__file__, "rb").read()).hexdigest()
    stamp = os.path.join(OUT, ".stamp")
    if os.path.exists(stamp) and open(stamp).read() == digest:
        return
    os.makedirs(OUT, exist_ok=True)
    for name, module, example, delegate in programs():
        if delegate == "batch up to 16":
            ep = torch.export.export(module, example,
                                     dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=16)},))
            example = (torch.randn(3, 8),)   # run at another batch than the export's
        else:
            ep = torch.export.export(module, example)
        if name == "cnn":   # the program the .pte was lowered from, for diff
            torch.export.save(ep, os.path.join(OUT, "cnn.pt2"))
        if delegate == "xnnpack":
            from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
            edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
        elif delegate == "initial buffer":
            # the buffer's initial value kept, in a mutable data segment
            from executorch.exir import ExecutorchBackendConfig
            from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
            program = to_edge(ep).to_executorch(ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(["total"])]))
            with open(os.path.join(OUT, name + ".pte"), "wb") as f:
                f.write(program.buffer)
            for i, x in enumerate(example):
                np.save(os.path.join(OUT, f"{name}.input{i}.npy"), x.numpy())
            continue
        elif delegate == "keep erfinv":
            # erfinv is no core ATen op: kept as users keep theirs
            from executorch.exir import EdgeCompileConfig
            edge = to_edge(ep, compile_config=EdgeCompileConfig(
                _core_aten_ops_exception_list=[torch.ops.aten.erfinv.default]))
        else:
            edge = to_edge(ep)
        ops = sorted({str(n.target).split(".")[-2] if "." in str(n.target) else str(n.target)
                      for n in edge.exported_program().graph.nodes if n.op == "call_function"})
        with open(os.path.join(OUT, name + ".pte"), "wb") as f:
            f.write(edge.to_executorch().buffer)
        with open(os.path.join(OUT, name + ".edge-ops.json"), "w") as f:
            json.dump(ops, f)
        for i, x in enumerate(example):
            np.save(os.path.join(OUT, f"{name}.input{i}.npy"), x.numpy())
    write_inline_constants(os.path.join(OUT, "cnn.pte"), os.path.join(OUT, "cnn_inline.pte"))
    for i in range(1):
        np.save(os.path.join(OUT, f"cnn_inline.input{i}.npy"), np.load(os.path.join(OUT, f"cnn.input{i}.npy")))
    with open(stamp, "w") as f:
        f.write(digest)


def graft(*args):
    return subprocess.run([GRAFT_CLI, *args], capture_output=True, text=True)


def inputs_of(name):
    i, found = 0, []
    while os.path.exists(os.path.join(OUT, f"{name}.input{i}.npy")):
        found.append(os.path.join(OUT, f"{name}.input{i}.npy"))
        i += 1
    return found


def executorch_outputs(path, inputs, runs=1):
    """The outputs of the method's last of `runs` executions (a mutated
    buffer keeps its update between them)."""
    program = Runtime.get().load_program(path)
    method = program.load_method("forward")
    for _ in range(runs):
        outputs = method.execute([torch.from_numpy(np.load(p)) for p in inputs])
    return [np.asarray(t) for t in outputs]


def check_runs(name, expected_ops, reference_name=None, runs=1):
    """reference_name: the program ExecuTorch runs for the reference (its
    pip runtime is built without the deprecated constant_buffer path);
    runs: compare the outputs of that many runs (graft-cli run --repeat)."""
    path = os.path.join(OUT, name + ".pte")
    info = graft("info", path, "--json")
    check(info.returncode == 0, f"{name}: info exits 0 ({info.stderr.strip()[:300]})")
    if info.returncode != 0:
        return
    histogram = json.loads(info.stdout)
    text = json.dumps(histogram)
    for op in expected_ops:
        check(f'"{op}"' in text, f"{name}: info lists {op}")
    inputs = inputs_of(name)
    reference = executorch_outputs(os.path.join(OUT, (reference_name or name) + ".pte"), inputs, runs)
    out_dir = os.path.join(OUT, "run-%s-%d" % (name, runs))
    os.makedirs(out_dir, exist_ok=True)
    args = ["run", path, "-o", out_dir, "--repeat", str(runs)]
    for i, p in enumerate(inputs):
        args += ["--input", f"input_{i}={p}"]
    run = graft(*args)
    check(run.returncode == 0, f"{name}: graft-cli run exits 0 ({run.stderr.strip()[:300]})")
    if run.returncode != 0:
        return
    outputs = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    # graft-cli names the files after the graph outputs, in their order
    graph_outputs = [o["name"] for o in histogram["outputs"]]
    check(len(graph_outputs) == len(reference), f"{name}: {len(graph_outputs)} outputs, ExecuTorch gives "
          f"{len(reference)} ({outputs})")
    for k, (out_name, ref) in enumerate(zip(graph_outputs, reference)):
        compare(f"{name}: output {k} after {runs} run(s)", np.load(os.path.join(out_dir, out_name + ".npy")), ref)
    if runs > 1:
        return   # onnxruntime below runs once: ONNX has no state

    # convert: the same program as ONNX, checked and run by onnxruntime
    onnx_path = os.path.join(OUT, name + ".onnx")
    convert = graft("convert", path, "-o", onnx_path)
    check(convert.returncode == 0, f"{name}: graft-cli convert to ONNX exits 0 ({convert.stderr.strip()[:300]})")
    if convert.returncode != 0:
        return
    import onnx
    import onnxruntime
    onnx.checker.check_model(onnx.load(onnx_path), full_check=True)
    session = onnxruntime.InferenceSession(onnx_path)
    feeds = {i.name: np.load(p) for i, p in zip(session.get_inputs(), inputs)}
    for k, (got, ref) in enumerate(zip(session.run(None, feeds), reference)):
        compare(f"{name}: ONNX output {k} in onnxruntime", got, ref)


def compare(what, got, ref):
    scale = max(float(np.abs(ref).max()), 1e-30)
    error = float(np.abs(got.astype(np.float64) - ref).max()) if got.shape == ref.shape else float("inf")
    check(error <= 1e-4 * scale, f"{what} {got.shape} vs ExecuTorch {ref.shape}: max error {error:.3g} "
          f"(bound {1e-4 * scale:.3g})")


def main():
    make_fixtures()
    check_runs("cnn", ["aten::_convolution", "aten::batch_norm", "aten::max_pool2d", "aten::hardtanh",
                       "aten::addmm"])
    check_runs("cnn_inline", ["aten::_convolution", "aten::batch_norm"], reference_name="cnn")
    check_runs("mlp", ["aten::addmm", "aten::gelu", "aten::sigmoid"])
    check_runs("block", ["aten::layer_norm", "aten::view", "aten::permute",
                         "aten::cat", "aten::softmax", "aten::bmm"])
    check_runs("resnet18", ["aten::_convolution", "aten::batch_norm", "aten::add"])
    check_runs("dynamic", ["aten::sym_size", "aten::view", "aten::softmax"])
    check_runs("buffer", ["aten::add", "aten::copy_"])
    # the buffer keeps its update from one run to the next, in both runtimes
    check_runs("buffer", ["aten::copy_"], runs=3)
    # without its initial value the buffer is named, not invented
    run = graft("run", os.path.join(OUT, "buffer_uninitialized.pte"), "--random")
    check(run.returncode != 0 and "uninitialized_state" in run.stderr,
          f"buffer_uninitialized: run refuses, naming the buffer read before it is written ({run.stderr.strip()[:200]})")
    dims = json.loads(graft("info", os.path.join(OUT, "dynamic.pte"), "--json").stdout)["inputs"][0]["shape"]
    check([(d["name"], d["max"]) for d in dims] == [("input_0_d0", 16), ("input_0_d1", 8)],
          f"dynamic: the input's dims are symbols bounded by the program ({dims})")

    # diff: the .pt2 torch.export wrote against the .pte lowered from it
    diff = graft("diff", os.path.join(OUT, "cnn.pt2"), os.path.join(OUT, "cnn.pte"), "--random")
    # (exit 1: the structures differ, to_edge made aten::linear a permute_copy and an addmm)
    check("the outputs agree" in diff.stdout and " 0 divergent" in diff.stdout,
          f"cnn: diff .pt2 against .pte runs both and the outputs agree ({diff.stdout.strip()[-300:]})")
    # every compute node aligned across the formats: the .pt2's linear with
    # the .pte's addmm (its permuted weight a view ExecuTorch plans), the
    # ONNX export's folded BatchNorms explained
    for a in ("cnn.pt2", "cnn.onnx", "resnet18.onnx", "mlp.onnx", "block.onnx", "dynamic.onnx"):
        b = a.split(".")[0] + ".pte"
        report = json.loads(graft("diff", os.path.join(OUT, a), os.path.join(OUT, b), "--json").stdout)["alignment"]
        check(report["matched_a"] == report["compute_nodes_a"] and report["matched_b"] == report["compute_nodes_b"],
              f"diff {a} {b}: every compute node matched or explained ({report})")

    # XNNPACK: one node per delegate call, run refuses naming the backend
    path = os.path.join(OUT, "mlp_xnnpack.pte")
    info = graft("info", path, "--json")
    check(info.returncode == 0 and "executorch_delegate::XnnpackBackend" in info.stdout,
          f"mlp_xnnpack: info shows the XnnpackBackend delegate ({info.stderr.strip()[:200]})")
    delegate = json.loads(graft("info", path, "--json").stdout)
    check(delegate["outputs"][0]["name"].startswith("XnnpackBackend_") and delegate["outputs"][0]["shape"] == [4, 7],
          f"mlp_xnnpack: the delegate call gives the program's output ({delegate['outputs']})")
    render = graft("render", path, "-o", os.path.join(OUT, "mlp_xnnpack.png"))
    check(render.returncode == 0, f"mlp_xnnpack: render draws it ({render.stderr.strip()[:200]})")
    args = ["run", path, "-o", os.path.join(OUT, "run-xnnpack")] + \
        [f"--input=input_{i}={p}" for i, p in enumerate(inputs_of("mlp_xnnpack"))]
    run = graft(*args)
    check(run.returncode != 0 and "XnnpackBackend" in run.stderr,
          f"mlp_xnnpack: run refuses, naming the backend ({run.stderr.strip()[:200]})")
    reference = executorch_outputs(path, inputs_of("mlp_xnnpack"))
    check(len(reference) == 1, "mlp_xnnpack: ExecuTorch itself runs the delegated program")
    convert = graft("convert", path, "-o", os.path.join(OUT, "mlp_xnnpack.onnx"))
    check(convert.returncode != 0 and "XnnpackBackend" in convert.stderr and
          not os.path.exists(os.path.join(OUT, "mlp_xnnpack.onnx")),
          f"mlp_xnnpack: convert refuses, naming the backend ({convert.stderr.strip()[:200]})")

    # lint: the portable set
    lint = graft("lint", os.path.join(OUT, "nonportable.pte"), "--json")
    found = [d for d in json.loads(lint.stdout)["diagnostics"] if d["rule"] == "executorch-non-portable"]
    check(len(found) == 1 and "aten::erfinv.out" in found[0]["message"],
          f"nonportable: lint names aten::erfinv.out ({[d['message'] for d in found]})")
    for name in ("cnn", "block", "resnet18"):
        lint = graft("lint", os.path.join(OUT, name + ".pte"), "--json")
        found = [d for d in json.loads(lint.stdout)["diagnostics"] if d["rule"] == "executorch-non-portable"]
        check(not found, f"{name}: every op is portable ({[d['message'] for d in found]})")

    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)


main()
