#!/usr/bin/env python3
"""graft-cli lint --target against the real tools, and rule by rule.

Usage: check-deploy-targets.py GRAFT_CLI SOURCE_DIR [--models NAME,...]

1. Real exports (make-target-models.py, cached under
   tests/fixtures-generated/targets): for ort-nnapi, ort-coreml and
   ort-coreml-mlprogram, on the model onnxruntime's usability checker
   checked (optimized.onnx), Graft's unsupported op types (nodes whose op is
   not in the target's list) must equal the checker's "Unsupported ops", and
   the node counts must be equal. Graft also checks the notes the checker
   lists as "caveats that have not been checked" (constant weights, 2-D
   only, ...); every node the two decide differently must be one of those,
   or one of the rows the checker cannot read in its own list (CoreML's
   "ai.onnx.ReduceSum", ML Program's "ai.onnx:Argmax"). With no such node
   the partition counts and sizes must be equal; with some, onnxruntime's
   own partitioner (usability_checker.check_partitioning) is run with
   Graft's per-node verdicts and must give Graft's partitions.
   For openvino, on model.onnx: the op types openvino's ONNX frontend cannot
   convert must equal Graft's unsupported op types, and where there are none,
   Core().query_model(..., "CPU") covers the whole model as Graft's single
   partition does.
2. Targets that cannot run here (tensorrt, ort-cuda, ort-qnn, ort-xnnpack,
   executorch's rules on ONNX do not apply): one small onnx.helper model per
   rule, supported and not.
Prints one line per model and target with both sides' figures; exit 1 on any
disagreement.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

ORT_TARGETS = ["ort-nnapi", "ort-coreml", "ort-coreml-mlprogram"]
# Rows of the shipped lists the checker's parser cannot match (see the
# comments in data/targets/ort-coreml*.target): Graft lists the op, the
# checker does not.
CHECKER_MISREADS = {"ort-coreml": {"onnx::ReduceSum"}, "ort-coreml-mlprogram": {"onnx::ArgMax"}}
CONDITION_REASONS = {"constant-input", "attribute", "rank", "dtype", "output", "inputs"}

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def lint(cli, model, target):
    out = subprocess.run([cli, "lint", str(model), "--target", target, "--json"], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(f"graft-cli lint {model} --target {target} failed: {out.stderr}")
    return json.loads(out.stdout)


def ort_partitions_with(model_path, verdicts):
    """onnxruntime's partitioner, deciding each node as Graft did."""
    from onnxruntime.tools.mobile_helpers import usability_checker

    class GraftVerdicts:
        def is_op_supported(self, node):
            return verdicts[node.name]

        def get_caveats(self):
            return []

    model = onnx.load(str(model_path), load_external_data=False)
    info = usability_checker.check_partitioning(model.graph, GraftVerdicts(), False)
    return info.num_partitions, info.num_supported_nodes, [len(g) for g in info.supported_groups]


def compare_ort(cli, name, folder):
    reference = json.loads((folder / "reference.json").read_text())
    for target in ORT_TARGETS:
        ref = reference["ort"][target]
        report = lint(cli, folder / "optimized.onnx", target)
        parts, nodes = report["partitions"], report["target"]["nodes"]
        by_op = sorted({n["op"] for n in nodes if n["reason"] == "op"})
        misread = CHECKER_MISREADS.get(target, set())
        ref_ops = sorted(set(ref["unsupported_ops"]) - misread)
        ref_supported = {node for group in ref["groups"] for node in group}
        differ = [n for n in nodes if n["supported"] != (n["node"] in ref_supported)]
        # With dynamic inputs, each side requires fixed input shapes as its
        # own shape inference knows them (onnx's strict inference for the
        # checker, Graft's, which follows shape data through Shape/Gather/
        # Concat): a node one calls dynamic and the other fixed.
        shapes_differ = [n for n in differ if ref["dynamic_input_nodes"] > 0 and
                         (n["reason"] == "dynamic-shape" or (n["supported"] and n["op"] not in ref["unsupported_ops"]))]
        unexplained = [n for n in differ if not (n["reason"] in CONDITION_REASONS or n["op"] in misread
                                                 or n in shapes_differ)]
        line = (f"{name:22} {target:22} graft {parts['count']:3} partitions {parts['supported_nodes']:4}/"
                f"{parts['total_nodes']:<4} ort {ref['partitions']:3} partitions {ref['supported']:4}/{ref['total']:<4}"
                f" unsupported ops: graft {','.join(o.split('::')[-1] for o in by_op) or '-'}"
                f" ort {','.join(o.split('::')[-1] for o in ref['unsupported_ops']) or '-'}")
        conditions = [n for n in differ if n not in shapes_differ]
        if conditions:
            reasons = sorted({f"{n['op'].split('::')[-1]}:{n['reason'] or 'listed'}" for n in conditions})
            line += f"; {len(conditions)} nodes decided by conditions the checker does not check ({', '.join(reasons)})"
        if shapes_differ:
            line += f"; {len(shapes_differ)} nodes whose input shapes the two shape inferences know differently"
        print(line)
        if by_op != ref_ops:
            fail(f"{name} {target}: unsupported op types {by_op} != onnxruntime's {ref['unsupported_ops']}")
        if parts["total_nodes"] != ref["total"]:
            fail(f"{name} {target}: {parts['total_nodes']} nodes, onnxruntime counts {ref['total']}")
        if unexplained:
            fail(f"{name} {target}: nodes decided differently without a reason: "
                 + ", ".join(f"{n['node']} ({n['op']}, {n['reason']})" for n in unexplained[:5]))
        if not differ:
            if (parts["count"], parts["sizes"]) != (ref["partitions"], ref["sizes"]):
                fail(f"{name} {target}: partitions {parts['count']} {parts['sizes']} != onnxruntime's "
                     f"{ref['partitions']} {ref['sizes']}")
        else:
            verdicts = {n["node"]: n["supported"] for n in nodes}
            count, supported, sizes = ort_partitions_with(folder / "optimized.onnx", verdicts)
            print(f"{'':22} {'':22} onnxruntime's partitioner with Graft's verdicts: {count} partitions "
                  f"{supported}/{parts['total_nodes']}")
            if (count, supported, sizes) != (parts["count"], parts["supported_nodes"], parts["sizes"]):
                fail(f"{name} {target}: onnxruntime's partitioner on Graft's verdicts gives {count} {sizes}, "
                     f"Graft {parts['count']} {parts['sizes']}")


def compare_openvino(cli, name, folder):
    reference = json.loads((folder / "reference.json").read_text())["openvino"]
    report = lint(cli, folder / "model.onnx", "openvino")
    parts = report["partitions"]
    ops = report["target"]["unsupported_ops"]
    print(f"{name:22} {'openvino':22} graft {parts['count']:3} partitions {parts['supported_nodes']:4}/"
          f"{parts['total_nodes']:<4} openvino: unconverted {','.join(reference['unsupported_ops']) or '-'}, "
          f"query_model {reference['query_supported']}/{reference['operations']} operations on CPU; graft "
          f"unsupported {','.join(ops) or '-'}")
    if ops != reference["unsupported_ops"]:
        fail(f"{name} openvino: unsupported {ops} != openvino's {reference['unsupported_ops']}")
    if not reference["unsupported_ops"] and (not reference["query_covers_all"] or parts["count"] != 1
                                             or parts["supported_nodes"] != parts["total_nodes"]):
        fail(f"{name} openvino: query_model covers all: {reference['query_covers_all']}, graft "
             f"{parts['count']} partitions")


# ---------------------------------------------------------------- rule by rule

def tensor(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def model_of(nodes, inputs, outputs, initializers=(), opset=17, domains=()):
    """The outputs are declared as onnx's strict shape inference infers them."""
    names = [o.name for o in outputs]
    graph = helper.make_graph(nodes, "rule", inputs, [], initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=imports), strict_mode=True)
    inferred = {v.name: v for v in model.graph.value_info}
    model.graph.output.extend(inferred[name] for name in names)
    for name in names:
        model.graph.value_info.remove(inferred[name])
    return model


def weight(name, shape):
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def conv(rank):
    spatial = [8] * (rank - 2)
    return model_of([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                    [tensor("x", TensorProto.FLOAT, [1, 4] + spatial)], [tensor("y", TensorProto.FLOAT, None)],
                    [weight("w", [4, 4] + [3] * (rank - 2))])


def computed_weight_conv():
    return model_of([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                    [tensor("x", TensorProto.FLOAT, [1, 4, 8, 8]), tensor("w", TensorProto.FLOAT, [4, 4, 3, 3])],
                    [tensor("y", TensorProto.FLOAT, None)])


def pool(op, rank, **attrs):
    return model_of([helper.make_node(op, ["x"], ["y"], name="pool", kernel_shape=[2] * (rank - 2), **attrs)],
                    [tensor("x", TensorProto.FLOAT, [1, 4] + [8] * (rank - 2))], [tensor("y", TensorProto.FLOAT, None)])


def unary(op, dtype=TensorProto.FLOAT, shape=(1, 4), opset=17, domain=""):
    return model_of([helper.make_node(op, ["x"], ["y"], name="node", domain=domain)], [tensor("x", dtype, list(shape))],
                    [tensor("y", dtype, None)], opset=opset)


def resize(mode, coordinates):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    return model_of([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode=mode,
                                      coordinate_transformation_mode=coordinates)],
                    [tensor("x", TensorProto.FLOAT, [1, 4, 8, 8])], [tensor("y", TensorProto.FLOAT, None)], [scales])


def topk(sorted_flag):
    k = numpy_helper.from_array(np.array([2], np.int64), "k")
    return model_of([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", sorted=sorted_flag)],
                    [tensor("x", TensorProto.FLOAT, [1, 8])], [tensor("v", TensorProto.FLOAT, None)], [k])


def squeeze(constant_axes):
    if constant_axes:
        return model_of([helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze")],
                        [tensor("x", TensorProto.FLOAT, [1, 4])], [tensor("y", TensorProto.FLOAT, None)],
                        [numpy_helper.from_array(np.array([0], np.int64), "axes")])
    return model_of([helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze")],
                    [tensor("x", TensorProto.FLOAT, [1, 4]), tensor("axes", TensorProto.INT64, [1])],
                    [tensor("y", TensorProto.FLOAT, None)])


def dynamic_relu():
    return unary("Relu", shape=("batch", 4))


def rank6_relu():
    return unary("Relu", shape=(1, 2, 2, 2, 2, 2))


def gemm_computed_b(trans_b):
    return model_of([helper.make_node("Gemm", ["a", "b"], ["y"], name="gemm", transB=trans_b)],
                    [tensor("a", TensorProto.FLOAT, [2, 4]), tensor("b", TensorProto.FLOAT, [4, 4])],
                    [tensor("y", TensorProto.FLOAT, None)])


# (target, model, node name, expected reason or None when supported)
RULES = [
    ("tensorrt", lambda: conv(4), "conv", None),
    ("tensorrt", lambda: pool("MaxPool", 4), "pool", None),
    ("tensorrt", lambda: pool("MaxPool", 3), "pool", "rank"),                 # 2-D or 3-D pooling only
    ("tensorrt", lambda: pool("MaxPool", 4, dilations=[2, 2]), "pool", "attribute"),
    ("tensorrt", lambda: unary("Relu", TensorProto.INT8), "node", "dtype"),   # FP32, FP16, BF16, INT32, INT64
    ("tensorrt", lambda: unary("Erf"), "node", None),
    ("tensorrt", lambda: unary("Det", shape=(2, 2)), "node", "op"),          # N in the matrix
    ("tensorrt", lambda: unary("Relu", opset=21), "node", "opset"),           # opset 9 to 20
    ("tensorrt", lambda: resize("cubic", "half_pixel"), "resize", "attribute"),
    ("tensorrt", lambda: resize("linear", "half_pixel"), "resize", None),
    ("tensorrt", lambda: topk(0), "topk", "attribute"),                       # sorted must be 1
    ("tensorrt", lambda: topk(1), "topk", None),
    ("tensorrt", lambda: squeeze(False), "squeeze", "constant-input"),        # axes an initializer
    ("tensorrt", lambda: squeeze(True), "squeeze", None),
    ("ort-cuda", lambda: unary("Erf"), "node", None),
    ("ort-cuda", lambda: unary("Acos"), "node", "op"),                        # no CUDA kernel
    ("ort-cuda", lambda: unary("Relu", TensorProto.INT32), "node", "dtype"),
    ("ort-cuda", lambda: unary("Relu", TensorProto.FLOAT16), "node", None),
    ("ort-qnn", lambda: conv(4), "conv", None),
    ("ort-qnn", computed_weight_conv, "conv", "constant-input"),
    ("ort-qnn", dynamic_relu, "node", "dynamic-shape"),
    ("ort-qnn", rank6_relu, "node", "rank"),
    ("ort-qnn", lambda: unary("Relu", TensorProto.INT64), "node", "dtype"),  # no 64-bit integers on HTP
    ("ort-qnn", lambda: unary("Erf"), "node", "op"),
    ("ort-xnnpack", lambda: conv(4), "conv", None),
    ("ort-xnnpack", lambda: conv(3), "conv", "rank"),                         # only 2-D
    ("ort-xnnpack", computed_weight_conv, "conv", "constant-input"),
    ("ort-xnnpack", lambda: pool("AveragePool", 4, ceil_mode=1), "pool", "attribute"),
    ("ort-xnnpack", lambda: unary("Relu"), "node", "op"),
    ("ort-nnapi", lambda: gemm_computed_b(0), "gemm", "constant-input"),      # B computed needs transB = 1
    ("ort-nnapi", lambda: gemm_computed_b(1), "gemm", None),
    ("ort-nnapi", dynamic_relu, "node", "dynamic-shape"),
    ("ort-coreml", rank6_relu, "node", "rank"),                               # rank 5 at most
    ("ort-coreml", lambda: resize("linear", "half_pixel"), "resize", "attribute"),
    ("ort-coreml", lambda: resize("linear", "asymmetric"), "resize", None),
    ("openvino", lambda: unary("Det", shape=(2, 2)), "node", "op"),
    ("openvino", lambda: unary("Erf"), "node", None),
]


def check_rules(cli):
    with tempfile.TemporaryDirectory() as tmp:
        for i, (target, build, node_name, expected) in enumerate(RULES):
            path = pathlib.Path(tmp) / f"rule{i}.onnx"
            model = build()
            # (onnx.checker wants a shape on every graph output, which a
            # Squeeze of computed axes cannot have.)
            if all(o.type.tensor_type.HasField("shape") for o in model.graph.output):
                onnx.checker.check_model(model)
            onnx.save(model, str(path))
            report = lint(cli, path, target)
            verdict = next(n for n in report["target"]["nodes"] if n["node"] == node_name)
            got = None if verdict["supported"] else verdict["reason"]
            status = "ok" if got == expected else "FAIL"
            print(f"rule {i:2} {target:12} {model.graph.node[0].op_type:22} expected {expected or 'supported':15} "
                  f"got {got or 'supported':15} {status}")
            if got != expected:
                fail(f"rule {i} on {target}: expected {expected}, got {got}")
            if expected is not None:
                diagnostic = [d for d in report["diagnostics"] if d["rule"] == "unsupported-op"
                              and d["node"] == node_name]
                if not diagnostic or diagnostic[0].get("reason") != expected or not diagnostic[0].get("op"):
                    fail(f"rule {i} on {target}: no unsupported-op diagnostic with op and reason {expected}")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    cli, source = sys.argv[1], pathlib.Path(sys.argv[2])
    models = None
    if len(sys.argv) > 4 and sys.argv[3] == "--models":
        models = sys.argv[4].split(",")
    fixtures = source / "tests" / "fixtures-generated" / "targets"
    generate = [sys.executable, str(source / "tests" / "analysis" / "make-target-models.py"), str(fixtures)]
    generated = subprocess.run(generate + (models or []), capture_output=True, text=True)
    if generated.returncode != 0:
        raise SystemExit(f"make-target-models.py failed:\n{generated.stdout}{generated.stderr}")
    names = models or sorted(p.name for p in fixtures.iterdir() if (p / "reference.json").exists())
    for name in names:
        compare_ort(cli, name, fixtures / name)
        compare_openvino(cli, name, fixtures / name)
    check_rules(cli)
    print(f"{len(failures)} disagreements")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
