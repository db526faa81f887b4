#!/usr/bin/env python3
"""Measures graft-cli edit --dynamic on the zoo's torch.export programs
(issue 34, point 2). Not a registered test: it takes the zoo's fixtures
(tests/zoo/make-zoo.py) and, with --bake, an export of every model.

  unspec-zoo.py BUILDDIR OUTDIR [--bake] [--zoo=DIR] [NAME...]

For each zoo model with tests/fixtures-generated/zoo/NAME/exported.pt2 (or
DIR/NAME/exported.pt2):
  the program is exported.pt2 as the zoo made it (most with a dynamic
  batch, which the edit renames; a few specialized), or with --bake the
  same model (tests/zoo/models.py, weights seeded as the zoo seeds them)
  exported again at the zoo's batch WITHOUT dynamic_shapes, so that its
  batch is specialized (cached in OUTDIR/baked/);
  graft-cli edit PROGRAM --dynamic INPUT:0=batch -o OUTDIR/NAME.pt2 with
  the first input;
  a saved program is loaded by torch.export.load and its module() run on
  the zoo's inputs-b3, and Graft runs the saved file on them: both against
  the zoo's eager outputs-b3 within 1e-4·max|ref|;
  a refusal is checked to name a node ("node '...'" in the message).
Writes OUTDIR/results.json, prints a line per model and the totals.
"""
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
ZOO = os.path.join(SOURCE, "tests/fixtures-generated/zoo")


def arrays(folder):
    return [np.load(p) for p in sorted(glob.glob(os.path.join(folder, "*.npy")), key=lambda p: int(os.path.basename(p)[:-4]))]


def within(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False, "shape %s, want %s" % (got.shape, want.shape)
    error, bound = float(np.abs(got - want).max(initial=0)), 1e-4 * float(np.abs(want).max(initial=0))
    return error <= bound, "%.3g (bound %.3g)" % (error, bound)


def bake(name, path):
    """The zoo's model exported at its batch without dynamic_shapes."""
    import torch
    sys.path.insert(0, os.path.join(SOURCE, "tests/zoo"))
    import models
    manifest = json.load(open(os.path.join(ZOO, name, "manifest.json")))
    model = models.load(name)
    example = models.inputs(name, manifest["export_batch"])
    with torch.no_grad():   # as make-zoo.py exports (no set_grad_enabled regions in the graph)
        torch.export.save(torch.export.export(model, example, strict=False), path)


def info(cli, path):
    return json.loads(subprocess.run([cli, "info", "--json", path], capture_output=True, text=True, check=True).stdout)


def check_torch(saved, inputs, refs):
    import torch
    try:
        ep = torch.export.load(saved)
    except RuntimeError:
        import transformers.modeling_outputs  # noqa: F401  (pytree registrations)
        ep = torch.export.load(saved)
    with torch.no_grad():
        outputs, _ = torch.utils._pytree.tree_flatten(ep.module()(*[torch.from_numpy(x) for x in inputs]))
    verdicts = [within(o.detach().numpy(), r) for o, r in zip(outputs, refs)]
    return all(v[0] for v in verdicts) and len(outputs) == len(refs), "; ".join(v[1] for v in verdicts)


def check_graft(cli, saved, inputs, refs, scratch):
    description = info(cli, saved)
    argv = [cli, "run", saved, "-o", scratch]
    for spec, value in zip(description["inputs"], inputs):
        path = os.path.join(scratch, "in-%s.npy" % spec["name"])
        np.save(path, value)
        argv += ["--input", "%s=%s" % (spec["name"], path)]
    run = subprocess.run(argv, capture_output=True, text=True)
    if run.returncode != 0:
        return False, run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "exit %d" % run.returncode
    outputs = [np.load(os.path.join(scratch, "%s.npy" % o["name"].replace("/", "_"))) for o in description["outputs"]]
    verdicts = [within(o, r) for o, r in zip(outputs, refs)]
    return all(v[0] for v in verdicts) and len(outputs) == len(refs), "; ".join(v[1] for v in verdicts)


def main():
    build, out = sys.argv[1], sys.argv[2]
    global ZOO
    baked = "--bake" in sys.argv[3:]
    ZOO = next((a[len("--zoo="):] for a in sys.argv[3:] if a.startswith("--zoo=")), ZOO)
    names = [a for a in sys.argv[3:] if not a.startswith("--")] or sorted(
        n for n in os.listdir(ZOO) if os.path.exists(os.path.join(ZOO, n, "exported.pt2")))
    cli = os.path.join(build, "app", "graft-cli")
    os.makedirs(os.path.join(out, "baked"), exist_ok=True)
    results = {}
    for name in names:
        folder = os.path.join(ZOO, name)
        manifest = json.load(open(os.path.join(folder, "manifest.json")))
        program = os.path.join(folder, "exported.pt2")
        result = {"dynamic_batch": manifest["artifacts"]["exported.pt2"].get("dynamic_batch")}
        if baked:
            program = os.path.join(out, "baked", name + ".pt2")
            result["dynamic_batch"] = False
            if not os.path.exists(program):
                try:
                    bake(name, program)
                except Exception as e:  # what torch cannot export is no case for the edit
                    result["verdict"] = "not exported: %s" % str(e).splitlines()[0][:200]
                    results[name] = result
                    print(name, result["verdict"], flush=True)
                    continue
        first = info(cli, program)["inputs"][0]["name"]
        saved = os.path.join(out, name + ".pt2")
        if os.path.exists(saved):
            os.unlink(saved)
        start = time.monotonic()
        try:
            edit = subprocess.run([cli, "edit", program, "--dynamic", "%s:0=batch" % first, "-o", saved],
                                  capture_output=True, text=True, timeout=1200)
            message = edit.stderr.strip().splitlines()[0] if edit.returncode != 0 and edit.stderr.strip() else ""
            code = edit.returncode
        except subprocess.TimeoutExpired:
            code, message = -1, "timed out after 1200 s"
        result["edit_seconds"] = round(time.monotonic() - start, 1)
        if code != 0 or not os.path.exists(saved):
            result["verdict"] = "refused"
            result["message"] = message[:600]
            result["names_node"] = "node '" in message
        else:
            inputs, refs = arrays(os.path.join(folder, "inputs-b3")), arrays(os.path.join(folder, "outputs-b3"))
            scratch = os.path.join(out, name + ".run")
            os.makedirs(scratch, exist_ok=True)
            try:
                result["torch"] = check_torch(saved, inputs, refs)
            except Exception as e:
                result["torch"] = (False, "torch: %s" % str(e).splitlines()[0][:300])
            result["graft"] = check_graft(cli, saved, inputs, refs, scratch)
            result["verdict"] = "freed" if result["torch"][0] and result["graft"][0] else "WRONG"
        results[name] = result
        print(name, result["verdict"], result.get("message") or (result.get("torch"), result.get("graft")), flush=True)
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    verdicts = [r["verdict"] for r in results.values()]
    refused = [r for r in results.values() if r["verdict"] == "refused"]
    print("%d programs: %d freed and proven, matching torch and eager at batch 3; %d refused (%d naming a node); "
          "%d wrong; %d not exported" % (len(verdicts), verdicts.count("freed"), len(refused),
                                         sum(r["names_node"] for r in refused), verdicts.count("WRONG"),
                                         sum(v.startswith("not exported") for v in verdicts)))


if __name__ == "__main__":
    main()
