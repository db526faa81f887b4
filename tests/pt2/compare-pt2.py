#!/usr/bin/env python3
"""Checks that torch.export.load reads a .pt2 Graft saved, against the
program it came from.

  compare-pt2.py same ORIGINAL SAVED [ORIGINAL SAVED...]
      the same graph (every node's op, arguments and outputs, by name), the
      same signature, range constraints, state dict and constants, and the
      same outputs of ep.module() on the example inputs.
  compare-pt2.py run JOBS.json
      for each job {"program": SAVED, "inputs": [IN.npy...], "outputs": PREFIX}:
      torch.export.load(SAVED).module()(*inputs), output i written as
      PREFIX.i.npy, for the caller to compare with Graft's runtime; with
      "ranges": PATH, the range constraints written there as "s: [lo, hi]".

Prints one line "ok ..." or raises.
"""
import sys

import numpy as np
import torch


def node_signature(node):
    def arg(a):
        if isinstance(a, torch.fx.Node):
            return "%" + a.name
        if isinstance(a, (list, tuple)):
            return [arg(x) for x in a]
        if isinstance(a, dict):
            return {k: arg(v) for k, v in a.items()}
        return repr(a)
    return (node.op, node.name, str(node.target), arg(node.args), arg(node.kwargs))


def load(path):
    try:
        return torch.export.load(path)
    except RuntimeError:
        # Programs returning transformers' ModelOutput need its pytree
        # registrations, which importing it makes.
        import transformers.modeling_outputs  # noqa: F401
        return torch.export.load(path)


def same(original_path, saved_path):
    a = load(original_path)
    b = load(saved_path)
    na = [node_signature(n) for n in a.graph.nodes]
    nb = [node_signature(n) for n in b.graph.nodes]
    assert na == nb, "graphs differ:\n%s\n%s" % (
        "\n".join(map(str, (x for x in na if x not in nb))), "\n".join(map(str, (x for x in nb if x not in na))))
    for n1, n2 in zip(a.graph.nodes, b.graph.nodes):
        v1, v2 = n1.meta.get("val"), n2.meta.get("val")
        if isinstance(v1, torch.Tensor):
            assert isinstance(v2, torch.Tensor) and str(v1.shape) == str(v2.shape) and v1.dtype == v2.dtype, \
                "%s: %s %s vs %s %s" % (n1.name, v1.dtype, v1.shape, getattr(v2, "dtype", None), getattr(v2, "shape", None))
    assert str(a.graph_signature) == str(b.graph_signature), "signatures differ:\n%s\n%s" % (
        a.graph_signature, b.graph_signature)
    ra = {str(k): (str(v.lower), str(v.upper)) for k, v in a.range_constraints.items()}
    rb = {str(k): (str(v.lower), str(v.upper)) for k, v in b.range_constraints.items()}
    assert ra == rb, "range constraints differ: %s vs %s" % (ra, rb)
    assert list(a.state_dict) == list(b.state_dict), "state dict keys differ"
    for k in a.state_dict:
        assert torch.equal(a.state_dict[k], b.state_dict[k]), "weight %s differs" % k
        assert isinstance(a.state_dict[k], torch.nn.Parameter) == isinstance(b.state_dict[k], torch.nn.Parameter), k
    assert sorted(a.constants) == sorted(b.constants), "constants differ"
    for k in a.constants:
        assert torch.equal(a.constants[k], b.constants[k]), "constant %s differs" % k
    args, kwargs = a.example_inputs
    outputs_a = a.module()(*args, **kwargs)
    outputs_b = b.module()(*args, **kwargs)
    flat_a, _ = torch.utils._pytree.tree_flatten(outputs_a)
    flat_b, _ = torch.utils._pytree.tree_flatten(outputs_b)
    for x, y in zip(flat_a, flat_b):
        assert torch.equal(x, y), "outputs differ"
    print("ok %s: %d nodes, %d weights, %d ranges" % (saved_path, len(na), len(a.state_dict), len(ra)))


def run(jobs_path):
    import json
    with open(jobs_path) as f:
        jobs = json.load(f)
    for job in jobs:
        ep = load(job["program"])
        inputs = [torch.from_numpy(np.load(p)) for p in job["inputs"]]
        with torch.no_grad():
            outputs = ep.module()(*inputs)
        flat, _ = torch.utils._pytree.tree_flatten(outputs)
        for i, y in enumerate(flat):
            np.save("%s.%d.npy" % (job["outputs"], i), y.detach().numpy())
        if "ranges" in job:
            with open(job["ranges"], "w") as f:
                f.write(", ".join("%s: [%s, %s]" % (k, v.lower, v.upper) for k, v in ep.range_constraints.items()))
        print("ok %s: %s" % (job["program"], [tuple(y.shape) for y in flat]))


if __name__ == "__main__":
    torch.manual_seed(0)
    if sys.argv[1] == "same":
        for original, saved in zip(sys.argv[2::2], sys.argv[3::2]):
            same(original, saved)
    elif sys.argv[1] == "run":
        run(sys.argv[2])
    else:
        raise SystemExit("usage: compare-pt2.py same A B... | run JOBS.json")
