"""graft.show (the window under Xvfb, the inline SVG without a display),
graft.compare_exports, and a notebook executed headless whose output holds
the inline SVG."""

import os
import subprocess
import time

import numpy as np
import onnx
import pytest
import torch

import graft
from conftest import SignBranch, TinyCNN


def wait_for_window(title_part, timeout=90):
    """The X window whose title contains title_part, or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", title_part],
                               capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.split():
            return found.stdout.split()[0]
        time.sleep(0.5)
    return None


def close(process):
    process.terminate()
    process.wait(timeout=30)


needs_display = pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="needs an X display (meson runs this under Xvfb)")


@needs_display
def test_show_module_opens_the_window(capsys):
    module = TinyCNN().eval()
    start = time.monotonic()
    process = graft.show(module, (torch.randn(1, 3, 16, 16),))
    # the interpreter is not blocked: show returned while the window starts
    assert time.monotonic() - start < 60 and process.poll() is None
    assert "exported with torch.export" in capsys.readouterr().err
    try:
        window = wait_for_window("TinyCNN-export.pt2")
        assert window is not None, "no Graft window appeared"
        assert "Graft" in subprocess.run(["xdotool", "getwindowname", window], capture_output=True, text=True).stdout
    finally:
        close(process)


@needs_display
def test_show_falls_back_to_trace_and_opens_a_comparison(capsys):
    module = SignBranch().eval()
    process = graft.show(module, (torch.ones(2, 4),))
    err = capsys.readouterr().err
    assert "torch.export failed" in err and "torch.jit.trace" in err, err
    try:
        assert wait_for_window("SignBranch-trace.pt") is not None
    finally:
        close(process)
    comparison = graft.compare_exports(module, (torch.ones(2, 4),), (-torch.ones(3, 4),))
    process = graft.show(comparison)
    try:
        assert wait_for_window("Compare Models") is not None
    finally:
        close(process)


def test_show_without_display_returns_the_inline_model(tmp_path, monkeypatch, exports):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    shown = graft.show(exports["onnx"])
    assert isinstance(shown, graft.Model) and "<svg" in shown._repr_svg_()
    proto = onnx.load(exports["onnx"])
    assert graft.show(proto).format == "onnx"
    scripted = torch.jit.script(exports["module"])
    assert graft.show(scripted).format == "torchscript"
    program = torch.export.export(exports["module"], (exports["x"],))
    assert graft.show(program).format == "exported_program"
    with pytest.raises(TypeError, match="example inputs"):
        graft.show(exports["module"])
    with pytest.raises(TypeError, match="cannot show"):
        graft.show(42)


def test_compare_exports_finds_the_flattened_branch():
    module = SignBranch().eval()
    with torch.no_grad():
        module.linear.weight.fill_(0.1)
        module.linear.bias.fill_(0.1)
    result = graft.compare_exports(module, (torch.ones(2, 4),), (-torch.ones(3, 4),))
    rows = {(row.a, row.b, row.inputs): row for row in result.rows}
    # torch.export refuses a data-dependent branch: said, not hidden
    assert result.exports["export"].path is None and "GuardOnDataDependent" in result.exports["export"].error
    assert rows[("trace", "script", "example")].agree
    assert "control-flow" in rows[("trace", "script", "example")].structure
    other = rows[("trace", "script", "other")]
    assert not other.agree and other.max_abs == pytest.approx(0.7, abs=1e-5)
    assert "If" in other.first_divergence
    assert result.first_disagreement() is other
    assert "NO" in result.table() and "<table>" in result._repr_html_()
    # without a window, the comparison itself: Jupyter shows its table
    assert graft.show(result, window=False) is result


def test_compare_exports_all_agree_on_a_cnn():
    module = TinyCNN().eval()
    result = graft.compare_exports(module, (torch.randn(2, 3, 16, 16),), (torch.randn(3, 3, 16, 16),))
    assert all(export.path for export in result.exports.values()), result.table()
    assert len(result.rows) == 12 and all(row.agree for row in result.rows), result.table()


def test_notebook_shows_the_model_inline(tmp_path, exports):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import os\nos.environ.pop('DISPLAY', None)\nimport graft"),
        nbformat.v4.new_code_cell(f"model = graft.load({str(exports['onnx'])!r})\nmodel"),
        nbformat.v4.new_code_cell(f"graft.show({str(exports['trace'])!r})"),
    ]
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    for cell in notebook.cells[1:]:
        data = cell.outputs[-1]["data"]
        assert "image/svg+xml" in data, cell.outputs
        assert "<svg" in data["image/svg+xml"]
    nbformat.write(notebook, tmp_path / "executed.ipynb")


def test_compare_exports_on_bert_from_config():
    import transformers
    config = transformers.BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=64)

    class LastHiddenState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = transformers.BertModel(config, add_pooling_layer=False)

        def forward(self, ids):
            return self.bert(ids).last_hidden_state

    result = graft.compare_exports(LastHiddenState().eval(), (torch.randint(0, 120, (2, 12)),),
                                   (torch.randint(0, 120, (3, 7)),))
    exported = {name for name, export in result.exports.items() if export.path}
    assert {"trace", "export", "onnx"} <= exported, result.table()
    # the other sequence length and batch run in every export that was made
    assert {row.inputs for row in result.rows} == {"example", "other"}
    assert all(row.agree for row in result.rows), result.table()
