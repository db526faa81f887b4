#!/usr/bin/env python3
"""Writes the reproducers of issue 20 (hostile and broken files) into OUTDIR.

Every file is small on disk and built by hand (onnx.helper for ONNX models,
raw bytes for .npy, hand-assembled pickles in zip archives for PyTorch
files), so each one exercises exactly one attack: sizes that overflow,
sizes that make a small file expand, nesting that exhausts the stack,
shared objects that make a walk exponential, graphs that break SSA.
tests/hostile/test-hostile.c loads, lints and runs them and checks for a
clean error within bounded time and memory.

usage: make-hostile-files.py OUTDIR
"""
import hashlib
import os
import struct
import sys
import zipfile

from onnx import TensorProto, helper

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
# Cached: the files are rewritten only when this script changes.
STAMP = os.path.join(OUT, ".stamp")
with open(__file__, "rb") as f:
    VERSION = hashlib.sha256(f.read()).hexdigest()
if os.path.exists(STAMP) and open(STAMP).read() == VERSION:
    sys.exit(0)


def path(name):
    return os.path.join(OUT, name)


# ---------------------------------------------------------------- ONNX


def save(model, name):
    # No onnx.checker: these models are invalid on purpose.
    with open(path(name), "wb") as f:
        f.write(model.SerializeToString())


def model_of(nodes, inputs, outputs, opset=17, initializers=()):
    graph = helper.make_graph(nodes, "hostile", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def vi(name, dtype=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


def split_model(sizes, name):
    node = helper.make_node("Split", ["x"], ["a", "b"] if len(sizes) == 2 else [f"o{i}" for i in range(len(sizes))],
                            axis=0, split=sizes)
    outs = [vi(o) for o in node.output]
    save(model_of([node], [vi("x", shape=[4])], outs, opset=11), name)


split_model([5, -1], "split-negative.onnx")
# Sums to 4 in wrapping 64-bit arithmetic.
split_model([1 << 62, 1 << 62, 1 << 62, (1 << 62) + 4], "split-wrapping.onnx")

shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1 << 40, 1 << 40])
save(model_of([helper.make_node("Reshape", ["x", "shape"], ["y"])], [vi("x", shape=[1])], [vi("y")],
              initializers=[shape]), "reshape-overflow.onnx")

# Loop with 2^40 trips and an empty body: only a time limit stops it.
body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
                         [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, [])],
                         [vi("cond_out", TensorProto.BOOL, [])])
trips = helper.make_tensor("trips", TensorProto.INT64, [], [1 << 40])
cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
save(model_of([helper.make_node("Loop", ["trips", "cond"], [], body=body)], [vi("x", shape=[1])], [],
              initializers=[trips, cond]), "loop-forever.onnx")
# The same loop with a graph output so the runtime has something to compute.
save(model_of([helper.make_node("Loop", ["trips", "cond", "x"], ["y"],
                                body=helper.make_graph(
                                    [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                                     helper.make_node("Identity", ["v_in"], ["v_out"])], "body",
                                    [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                                     vi("v_in", shape=[1])],
                                    [vi("cond_out", TensorProto.BOOL, []), vi("v_out", shape=[1])]))],
              [vi("x", shape=[1])], [vi("y", shape=[1])], initializers=[trips, cond]), "loop-trips.onnx")

# Loop whose scan output collects 1 MiB per iteration: memory grows until a limit stops it.
big = helper.make_tensor("big_shape", TensorProto.INT64, [1], [1 << 18])
scan_body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Expand", ["x", "big_shape"], ["slice"])], "body",
    [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, [])],
    [vi("cond_out", TensorProto.BOOL, []), vi("slice", shape=[1 << 18])])
save(model_of([helper.make_node("Loop", ["trips", "cond"], ["scan"], body=scan_body)],
              [vi("x", shape=[1])], [vi("scan")], initializers=[trips, cond, big]), "loop-scan-growth.onnx")

# Kernels that take sizes from inputs and attributes.
def const(name, dtype, dims, values):
    return helper.make_tensor(name, dtype, dims, values)


range_inputs = ["start", "limit", "delta"]
save(model_of([helper.make_node("Range", range_inputs, ["y"])], [vi("x", shape=[1])], [vi("y")],
              initializers=[const("start", TensorProto.FLOAT, [], [0]), const("limit", TensorProto.FLOAT, [], [float("inf")]),
                            const("delta", TensorProto.FLOAT, [], [1])]), "range-infinite.onnx")
save(model_of([helper.make_node("Range", range_inputs, ["y"])], [vi("x", shape=[1])], [vi("y")],
              initializers=[const("start", TensorProto.INT64, [], [-(1 << 63)]),
                            const("limit", TensorProto.INT64, [], [(1 << 63) - 1]),
                            const("delta", TensorProto.INT64, [], [3])]), "range-overflow.onnx")
save(model_of([helper.make_node("Resize", ["x", "", "scales"], ["y"])], [vi("x", shape=[2, 3])], [vi("y")],
              initializers=[const("scales", TensorProto.FLOAT, [2], [float("nan"), 1])]), "resize-nan-scale.onnx")
save(model_of([helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], pads=[1 << 62, 0, 1 << 62, 0])],
              [vi("x", shape=[1, 1, 4, 4])], [vi("y")]), "maxpool-huge-pads.onnx")
save(model_of([helper.make_node("Pad", ["x", "pads"], ["y"])], [vi("x", shape=[2, 3])], [vi("y")],
              initializers=[const("pads", TensorProto.INT64, [4], [1 << 40, 0, 1 << 40, 0])]), "pad-huge.onnx")
save(model_of([helper.make_node("Tile", ["x", "repeats"], ["y"])], [vi("x", shape=[2, 3])], [vi("y")],
              initializers=[const("repeats", TensorProto.INT64, [2], [1 << 40, 1 << 40])]), "tile-huge.onnx")
# Inputs that do not concatenate: the error quoted a shape already freed.
save(model_of([helper.make_node("Concat", ["a", "b"], ["y"], axis=0)],
              [vi("a", shape=[2, 3]), vi("b", shape=[2, 4])], [vi("y")]), "concat-mismatch.onnx")

# A node without the input its operator requires (found by fuzz-onnx).
save(model_of([helper.make_node("MaxPool", [], ["y"], name="pool", kernel_shape=[2, 2])],
              [vi("x", shape=[1, 1, 4, 4])], [vi("y")]), "maxpool-no-input.onnx")

# Two producers of "y" (SSA violation): Relu(x) and Neg(x).
save(model_of([helper.make_node("Relu", ["x"], ["y"], name="relu"), helper.make_node("Neg", ["x"], ["y"], name="neg")],
              [vi("x", shape=[2])], [vi("y", shape=[2])]), "ssa-two-producers.onnx")
# A cycle: a = Relu(b), b = Neg(a), y = Identity(a).
save(model_of([helper.make_node("Relu", ["b"], ["a"], name="relu"), helper.make_node("Neg", ["a"], ["b"], name="neg"),
               helper.make_node("Identity", ["a"], ["y"], name="out")],
              [vi("x", shape=[2])], [vi("y", shape=[2])]), "cycle.onnx")
# An input nobody produces.
save(model_of([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
              [vi("x", shape=[2])], [vi("y", shape=[2])]), "undefined-input.onnx")
# MaxPool with a zero kernel (the runtime would answer -inf everywhere).
save(model_of([helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[0, 0])],
              [vi("x", shape=[1, 1, 4, 4])], [vi("y")]), "maxpool-zero-kernel.onnx")
save(model_of([helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], strides=[0, 0])],
              [vi("x", shape=[1, 1, 4, 4])], [vi("y")]), "avgpool-zero-stride.onnx")
# Terminal escapes in names and metadata.
m = model_of([helper.make_node("Relu", ["x"], ["y"], name="\x1b]0;pwned\x07relu\x1b[2J")],
             [vi("x", shape=[2])], [vi("y", shape=[2])])
m.producer_name = "\x1b]52;c;cHduZWQ=\x07evil"
m.graph.doc_string = "\x1b[31mred\x1b[0m"
helper.set_model_props(m, {"note": "line\x1b[1Aup"})
save(m, "terminal-escapes.onnx")

# ---------------------------------------------------------------- .npy


def npy(header, data=b""):
    header = header + " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


write("descr-empty.npy", npy("{'descr': '', 'fortran_order': False, 'shape': (1,), }", b"\0" * 4))
write("descr-order-only.npy", npy("{'descr': '<', 'fortran_order': False, 'shape': (1,), }", b"\0" * 4))
write("unicode-high.npy", npy("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", b"\x00\x00\x00\x80"))
write("declares-2gb.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (536870912,), }", b"\0" * 8))
write("declares-2gb-strings.npy", npy("{'descr': '<U1', 'fortran_order': False, 'shape': (536870912,), }", b"\0" * 8))
write("shape-overflow.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", b"\0" * 8))

# ---------------------------------------------------------------- pickles


class Pickle:
    """Protocol-2 opcodes, assembled by hand."""

    def __init__(self):
        self.b = bytearray(b"\x80\x02")

    def op(self, data):
        self.b += data
        return self

    def int(self, v):
        if 0 <= v < 256:
            return self.op(b"K" + bytes([v]))
        if -(1 << 31) <= v < (1 << 31):
            return self.op(b"J" + struct.pack("<i", v))
        n = (v.bit_length() + 8) // 8
        return self.op(b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True))

    def str(self, s):
        s = s.encode()
        return self.op(b"X" + struct.pack("<I", len(s)) + s)

    def global_(self, module, name):
        return self.op(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def tuple_of_ints(self, values):
        self.op(b"(")
        for v in values:
            self.int(v)
        return self.op(b"t")

    def tensor(self, key, numel, sizes, strides, offset=0, storage_class="FloatStorage"):
        self.global_("torch._utils", "_rebuild_tensor_v2").op(b"(")
        self.op(b"(").str("storage").global_("torch", storage_class).str(key).str("cpu").int(numel).op(b"tQ")
        self.int(offset).tuple_of_ints(sizes).tuple_of_ints(strides).op(b"\x89")
        self.global_("collections", "OrderedDict").op(b")R")
        return self.op(b"tR")

    def put(self, index):
        return self.op(b"r" + struct.pack("<I", index))

    def get(self, index):
        return self.op(b"j" + struct.pack("<I", index))

    def stop(self):
        return bytes(self.b + b".")


def archive(name, records, compress=()):
    """A zip in PyTorch's layout: every record below one top folder."""
    with zipfile.ZipFile(path(name), "w") as z:
        for record, data in records.items():
            method = zipfile.ZIP_DEFLATED if record in compress else zipfile.ZIP_STORED
            z.writestr(zipfile.ZipInfo("hostile/" + record), data, compress_type=method)


CODE_RETURNS_W = ("class M(Module):\n"
                  "  __parameters__ = [\"w\", ]\n"
                  "  w : Tensor\n"
                  "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
                  "    return torch.add(x, self.w)\n")


def script_archive(name, data_pkl, code=CODE_RETURNS_W, extra=None, compress=()):
    records = {"data.pkl": data_pkl, "code/__torch__.py": code, "constants.pkl": b"\x80\x02).", "version": b"3\n"}
    records.update(extra or {})
    archive(name, records, compress)


def module_with_tensor(sizes, strides, numel, offset=0):
    p = Pickle().global_("__torch__", "M").op(b")\x81").op(b"}").str("w")
    return p.tensor("0", numel, sizes, strides, offset).op(b"sb").stop()


# numel × itemsize overflows: size [2^62+1], stride [0].
script_archive("tensor-numel-overflow.pt", module_with_tensor([(1 << 62) + 1], [0], 1),
               extra={"data/0": b"\0" * 4})
# The extent check wraps past 2^64: (2-1)·(2^63-1) + (2-1)·(2^63-1) + 3.
script_archive("tensor-stride-wrap.pt", module_with_tensor([2, 2], [(1 << 63) - 1, (1 << 63) - 1], 4, offset=3),
               extra={"data/0": b"\0" * 16})
# A stride-0 "expanded" view of 2^30 elements over one float: 4 GiB if gathered.
script_archive("tensor-expanded.pt", module_with_tensor([1 << 30], [0], 1), extra={"data/0": b"\0" * 4})


def state_dict(name, pickle_bytes, storages, compress=()):
    records = {"data.pkl": pickle_bytes, "version": b"3\n"}
    records.update(storages)
    archive(name, records, compress)


# 40 tensors sharing one 64 MiB Deflate storage: inflated once, not 40 times.
STORAGE_MB = 64
p = Pickle().op(b"}(")
for k in range(40):
    p.str(f"t{k}").tensor("0", STORAGE_MB << 18, [STORAGE_MB << 18], [1])
state_dict("shared-storage.pt", p.op(b"u").stop(), {"data/0": b"\0" * (STORAGE_MB << 20)}, compress={"data/0"})

# A 255 MiB Deflate storage: slow enough to cancel while it inflates.
p = Pickle().op(b"}(").str("w").tensor("0", 255 << 18, [255 << 18], [1]).op(b"u")
state_dict("slow-inflate.pt", p.stop(), {"data/0": b"\0" * (255 << 20)}, compress={"data/0"})

# 20 M empty tuples, each popped: 40 MB of data.pkl, a few hundred KB deflated.
state_dict("pickle-many-tuples.pt", b"\x80\x02" + b")0" * 20_000_000 + b"}.", {}, compress={"data.pkl"})

# A state_dict whose nested dict is reused 50 times at each of 8 levels: 50^8 paths.
p = Pickle()
p.op(b"}").put(0).op(b"(").str("w").tensor("0", 1, [1], [1]).op(b"u0")
for level in range(1, 9):
    p.op(b"}").put(level).op(b"(")
    for k in range(50):
        p.str(f"k{k}").get(level - 1)
    p.op(b"u" if level == 8 else b"u0")
state_dict("state-dict-dag.pt", p.stop(), {"data/0": b"\0" * 4})

# A TorchScript module tree where each level holds the next level twice: 2^40 paths.
p = Pickle()
p.global_("__torch__", "M").op(b")\x81").op(b"}").op(b"b").put(0).op(b"0")
for level in range(1, 41):
    p.global_("__torch__", "M").op(b")\x81").op(b"}(").str("a").get(level - 1).str("b").get(level - 1)
    p.op(b"ub").put(level)
    if level < 40:
        p.op(b"0")
script_archive("module-dag.pt", p.stop(),
               code="class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return x\n")

# f_i calls f_{i+1} twice, 40 levels, no operators: 2^40 inlined calls.
LEVELS = int(os.environ.get("GRAFT_HOSTILE_LEVELS", "40"))
code = "class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return (self).f0(x, )\n"
for i in range(LEVELS):
    code += (f"  def f{i}(self: __torch__.M, x: Tensor) -> Tensor:\n"
             f"    a = (self).f{i + 1}(x, )\n    b = (self).f{i + 1}(a, )\n    return b\n")
code += f"  def f{LEVELS}(self: __torch__.M, x: Tensor) -> Tensor:\n    return x\n"
script_archive("inline-exponential.pt", Pickle().global_("__torch__", "M").op(b")\x81}b").stop(), code=code)


# Deep expressions in code/: one file per form of nesting.
def deep_code(name, expression):
    code = ("class M(Module):\n  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
            f"    return {expression}\n")
    script_archive(name, Pickle().global_("__torch__", "M").op(b")\x81}b").stop(), code=code,
                   compress={"code/__torch__.py"})


N = 100_000
deep_code("code-deep-not.pt", "not " * N + "x")
deep_code("code-deep-add.pt", " + ".join(["x"] * N))
deep_code("code-deep-subscript.pt", "x" + "[0]" * N)
deep_code("code-deep-attribute.pt", "self" + ".a" * 30_000)
deep_code("code-deep-minus.pt", "-" * N + "x")
deep_code("code-deep-call.pt", "torch.relu(" * N + "x" + ")" * N)

with open(STAMP, "w") as f:
    f.write(VERSION)
