"""graft-cli convert TorchScript → .pt2 over the zoo: every model's traced.pt
and scripted.pt converted with its export shapes and the batch dim of every
input dynamic (batch:1:64), then loaded with torch.export.load and run
against torch.jit.load at the export batch and the other batch (the zoo's
inputs-b2 / inputs-b3), within 1e-4·max|ref|.

usage: convert-zoo.py GRAFT_CLI ZOO_DIR OUT_DIR [MODEL…]
Prints one line per file and a summary; writes OUT_DIR/convert-zoo.json.
Each .pt2 is removed once checked (the zoo's come to some 5 GB) unless
KEEP_PT2=1 is set."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module

check = import_module("check-converted-pt2")


def input_names(graft_cli, path):
    info = subprocess.run([graft_cli, "info", path, "--json"], capture_output=True, text=True, timeout=600)
    if info.returncode != 0:
        return None, info.stderr.strip()
    return [i["name"] for i in json.loads(info.stdout)["inputs"]], None


def compare(ts_path, pt2_path, folders):
    ep = torch.export.load(pt2_path)
    program = ep.module()
    scripted = torch.jit.load(ts_path)
    scripted.eval()
    worst = 0.0
    for folder in folders:
        inputs = check.load_inputs(folder)
        with torch.no_grad():
            ref_result = scripted(*inputs)
            got_result = program(*inputs)
        if check.structure(ref_result) != check.structure(got_result):
            return f"result {check.structure(got_result)} where TorchScript gives {check.structure(ref_result)}", worst
        ref, got = check.flatten(ref_result), check.flatten(got_result)
        if len(ref) != len(got):
            return f"{len(got)} outputs where TorchScript gives {len(ref)}", worst
        for r, g in zip(ref, got):
            if r.shape != g.shape:
                return f"shape {tuple(g.shape)} where TorchScript gives {tuple(r.shape)} ({os.path.basename(folder)})", worst
            if r.numel():
                r, g = r.double(), g.double()
                worst = max(worst, (r - g).abs().max().item() / max(r.abs().max().item(), 1e-30))
    return (None if worst <= 1e-4 else f"differs: {worst:.2e} of max|ref|"), worst


def main():
    graft_cli, zoo, out = sys.argv[1:4]
    only = set(sys.argv[4:])
    warnings.filterwarnings("ignore")
    os.makedirs(out, exist_ok=True)
    results = {}
    for model in sorted(os.listdir(zoo)):
        folder = os.path.join(zoo, model)
        manifest_path = os.path.join(folder, "manifest.json")
        if (only and model not in only) or not os.path.exists(manifest_path):
            continue
        manifest = json.load(open(manifest_path))
        folders = [os.path.join(folder, "inputs-b%d" % manifest["export_batch"]),
                   os.path.join(folder, "inputs-b%d" % manifest["other_batch"])]
        for kind in ("traced", "scripted"):
            ts_path = os.path.join(folder, kind + ".pt")
            if not os.path.exists(ts_path):
                continue
            key = f"{model}/{kind}"
            names, problem = input_names(graft_cli, ts_path)
            result = {"converted": False, "verified": False}
            if names is None:
                result["error"] = "graft cannot open it: " + problem
            elif len(names) < len(manifest["inputs"]):
                # more in Graft: Optional ones the zoo leaves out (None), which convert leaves out too
                result["error"] = f"{len(names)} inputs in Graft, {len(manifest['inputs'])} in the zoo's manifest"
            else:
                pt2_path = os.path.join(out, f"{model}-{kind}.pt2")
                command = [graft_cli, "convert", ts_path, "-o", pt2_path]
                for name, spec in zip(names, manifest["inputs"]):
                    command += ["--shape", name + "=" + "x".join(str(d) for d in spec["shape"]),
                                "--dtype", name + "=" + spec["dtype"], "--dynamic", name + ":0=batch:1:64"]
                run = subprocess.run(command, capture_output=True, text=True, timeout=1200)
                if run.returncode != 0:
                    result["error"] = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit {run.returncode}"
                else:
                    result["converted"] = True
                    try:
                        problem, worst = compare(ts_path, pt2_path, folders)
                        result["max_error"] = worst
                        if problem is None:
                            result["verified"] = True
                        else:
                            result["error"] = problem
                    except Exception as e:   # torch's own message is the finding
                        result["error"] = f"torch: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
                    if not os.environ.get("KEEP_PT2"):
                        os.remove(pt2_path)
            results[key] = result
            state = "verified" if result["verified"] else "converted, fails in torch" if result["converted"] else "refused"
            print(f"{key}: {state}{': ' + result['error'] if 'error' in result else ''}", flush=True)
    for kind in ("traced", "scripted"):
        rows = [r for k, r in results.items() if k.endswith("/" + kind)]
        print(f"{kind}: {sum(r['verified'] for r in rows)} of {len(rows)} verified, "
              f"{sum(r['converted'] for r in rows)} converted")
    json.dump(results, open(os.path.join(out, "convert-zoo.json"), "w"), indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
