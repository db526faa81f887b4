"""Fixtures of the graft package's tests: real exports made here by
PyTorch 2.13 (trace, script, torch.export, both ONNX exporters) of a small
CNN and of a BERT built from a config, in one folder per session.

The package under test is the one on PYTHONPATH: meson puts the build
tree's there (build/python) with GRAFT_CLI and GRAFT_GUI naming the
programs built beside it; an installed copy (pip install .) is tested by
pointing PYTHONPATH at its site-packages and PATH at its bin instead."""

import os
import subprocess
import warnings

import numpy as np
import pytest

try:
    import graft
except ImportError as error:  # the extension was built for another Python
    pytest.exit(f"cannot import the graft package built here ({error}): skipped", returncode=77)

import torch

torch.manual_seed(0)


class TinyCNN(torch.nn.Module):
    """Conv, BatchNorm, ReLU, pooling and a classifier, named like a torchvision model."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 16, 3, stride=2, padding=1), torch.nn.ReLU())
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.classifier = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class SignBranch(torch.nn.Module):
    """A data-dependent branch: a trace keeps the branch its example took."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        if bool(y.sum() > 0):
            return y * 2
        return y - 1


def cli():
    return os.environ.get("GRAFT_CLI") or "graft-cli"


def run_cli(*args, check=True):
    result = subprocess.run([cli(), *map(str, args)], capture_output=True, text=True)
    if check and result.returncode not in (0, 1):
        raise AssertionError(f"graft-cli {' '.join(map(str, args))}: {result.stderr}")
    return result


@pytest.fixture(scope="session")
def exports(tmp_path_factory):
    """Paths of the CNN's exports, and the module and an input."""
    folder = tmp_path_factory.mktemp("exports")
    module = TinyCNN().eval()
    with torch.no_grad():
        module.features[1].running_mean.uniform_(-0.5, 0.5)
        module.features[1].running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 16, 16)
    paths = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paths["trace"] = folder / "cnn_traced.pt"
        torch.jit.save(torch.jit.trace(module, (x,)), paths["trace"])
        paths["script"] = folder / "cnn_scripted.pt"
        torch.jit.save(torch.jit.script(module), paths["script"])
        paths["pt2"] = folder / "cnn.pt2"
        torch.export.save(torch.export.export(module, (x,)), paths["pt2"])
        paths["onnx"] = folder / "cnn.onnx"
        torch.onnx.export(module, (x,), paths["onnx"], input_names=["x"], output_names=["logits"], dynamo=False)
    return {"module": module, "x": x, "folder": folder, **paths}


@pytest.fixture(scope="session")
def bert(tmp_path_factory):
    """A BERT from a config (random weights, nothing downloaded), traced."""
    import transformers
    folder = tmp_path_factory.mktemp("bert")
    config = transformers.BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=64, torchscript=True)
    model = transformers.BertModel(config).eval()
    ids = torch.randint(0, 120, (2, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model, (ids,), strict=False)
    path = folder / "bert_traced.pt"
    torch.jit.save(traced, path)
    with torch.no_grad():
        expected = model(ids)[0].numpy()
    return {"path": path, "ids": ids.numpy(), "expected": expected, "model": model}


def torch_reference(module, x):
    with torch.no_grad():
        return module(torch.from_numpy(np.ascontiguousarray(x))).numpy()
