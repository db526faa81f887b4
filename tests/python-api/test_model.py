"""graft.load, Model.info/lint/run/edit/apply_recipe/save/render, graft.diff
and graft.convert on real exports, checked against graft-cli's JSON, PyTorch
and onnxruntime."""

import gc
import json
import os
import stat

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

import graft
from conftest import run_cli, torch_reference


def test_info_is_the_cli_json(exports):
    for kind in ("trace", "script", "pt2", "onnx"):
        model = graft.load(exports[kind])
        cli = json.loads(run_cli("info", exports[kind], "--json").stdout)
        assert model.info == cli, kind
    assert graft.load(exports["pt2"]).format == "exported_program"
    assert graft.load(exports["trace"]).format == "torchscript"


def test_lint_is_the_cli_json(exports):
    model = graft.load(exports["onnx"])
    diagnostics = model.lint()
    cli = json.loads(run_cli("lint", exports["onnx"], "--json").stdout)["diagnostics"]
    assert diagnostics == cli
    # the traced export fixes the batch: Graft says so
    assert any(d["rule"] == "static-input-dim" and "x" in d["message"] for d in diagnostics), diagnostics
    assert json.loads(run_cli("lint", exports["trace"], "--json", "--onnx-export").stdout)["diagnostics"] == \
        graft.load(exports["trace"]).lint(onnx_export=True)


@pytest.mark.parametrize("kind", ["trace", "script", "pt2", "onnx"])
def test_run_matches_pytorch(exports, kind):
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16), dtype=np.float32)
    outputs = graft.load(exports[kind]).run({"x": x})
    (result,) = outputs.values()
    np.testing.assert_allclose(result, torch_reference(exports["module"], x), rtol=1e-4, atol=1e-5)


def test_run_outputs_are_the_runtimes_buffers(exports):
    model = graft.load(exports["onnx"])
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16), dtype=np.float32)
    first = model.run({"x": x})["logits"]
    # numpy wraps the runtime's tensor: no copy on the way out
    assert type(first.base.obj).__name__ == "Tensor"
    # a strided view is made contiguous and gives the same answer
    wide = np.zeros((1, 3, 16, 32), dtype=np.float32)
    wide[..., ::2] = x
    np.testing.assert_array_equal(model.run({"x": wide[..., ::2]})["logits"], first)
    # two threads, the same numbers; the first result is still intact
    np.testing.assert_allclose(model.run({"x": x}, threads=2)["logits"], first, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first, torch_reference(exports["module"], x), rtol=1e-4, atol=1e-5)
    # the outputs outlive the runtime and the model; the input was only read
    before = x.copy()
    model.edit("cleanup")
    del model
    gc.collect()
    np.testing.assert_allclose(first, torch_reference(exports["module"], x), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(x, before)


def test_run_random_inputs_and_errors(exports):
    model = graft.load(exports["onnx"])
    assert model.run(random=True, seed=3)["logits"].shape == (1, 10)
    with pytest.raises(graft.GraftError, match="input 'x'.*was not given"):
        model.run()
    with pytest.raises(graft.GraftError, match="no input 'y'"):
        model.run({"x": np.zeros((1, 3, 16, 16), np.float32), "y": np.zeros(3, np.float32)})
    with pytest.raises(graft.GraftError):
        model.run({"x": np.zeros((1, 3, 16, 16), np.float64)})   # Graft's own message about the dtype
    with pytest.raises(graft.GraftError, match="nonexistent"):
        graft.load(exports["folder"] / "nonexistent.onnx")
    garbage = exports["folder"] / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises(graft.GraftError):
        graft.load(garbage)


def test_run_bf16_where_the_cpu_has_it(exports):
    """precision="bf16": the products by the weights in bfloat16, within
    bf16's rounding of PyTorch, and not bit for bit the f32 run; refused
    with the reason on a CPU without AVX512_BF16, never silently f32."""
    model = graft.load(exports["onnx"])
    x = np.random.default_rng(4).standard_normal((1, 3, 16, 16), dtype=np.float32)
    with pytest.raises(ValueError, match="'f32' or 'bf16'"):
        model.run({"x": x}, precision="fp8")
    try:
        bf16 = model.run({"x": x}, precision="bf16")["logits"]
    except graft.GraftError as e:
        assert "bf16 needs" in str(e)
        pytest.skip(str(e))
    f32 = model.run({"x": x})["logits"]
    reference = torch_reference(exports["module"], x)
    scale = np.abs(reference).max()
    assert np.abs(bf16 - reference).max() <= 2e-2 * scale
    assert not np.array_equal(bf16, f32)
    np.testing.assert_allclose(f32, reference, rtol=1e-4, atol=1e-5)


def test_transformers_bert_from_config(bert):
    model = graft.load(bert["path"])
    name = model.info["inputs"][0]["name"]
    (output,) = model.run({name: bert["ids"]}, threads=2).values()
    # transformers 5 returns a dict even from a TorchScript trace
    hidden = output["last_hidden_state"] if isinstance(output, dict) else output[0]
    np.testing.assert_allclose(hidden, bert["expected"], rtol=1e-3, atol=1e-4)


def test_edit_dynamic_batch_then_save(exports, tmp_path):
    model = graft.load(exports["onnx"])
    assert "make-dim-dynamic" in graft.edit_operations()
    result = model.edit("make_dim_dynamic", input="x", axis=0, symbol="batch")
    assert result.verified is True and result.checks, result
    assert model.info["inputs"][0]["shape"][0] == "batch"
    x = np.random.default_rng(4).standard_normal((3, 3, 16, 16), dtype=np.float32)
    reference = torch_reference(exports["module"], x)
    np.testing.assert_allclose(model.run({"x": x})["logits"], reference, rtol=1e-4, atol=1e-5)
    target = tmp_path / "dynamic.onnx"
    model.save(target)
    onnx.checker.check_model(onnx.load(target), full_check=True)
    session = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x})[0], reference, rtol=1e-4, atol=1e-5)
    # the source is never overwritten by accident, and saving keeps the mode
    with pytest.raises(graft.GraftError):
        model.save(exports["onnx"])
    os.chmod(target, 0o640)
    model.save(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_pt2_edited_and_saved_as_pt2(exports, tmp_path):
    """A torch.export program edited through the package saves as .pt2
    (not ONNX bytes), which torch.export.load runs as before the rename."""
    import torch
    model = graft.load(exports["pt2"])
    output = model.info["outputs"][0]["name"]
    model.edit("rename-value", value=output, to="scores")
    target = tmp_path / "renamed.pt2"
    model.save(target)
    program = torch.export.load(target)
    assert list(program.graph_signature.user_outputs) == ["scores"]
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16), dtype=np.float32)
    with torch.no_grad():
        got = program.module()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, torch_reference(exports["module"], x), rtol=1e-4, atol=1e-5)
    # a TorchScript name is a format Graft only reads
    with pytest.raises(graft.GraftError, match="does not write"):
        model.save(tmp_path / "renamed.pt")


def test_edit_errors_and_surgery(exports, tmp_path):
    model = graft.load(exports["onnx"])
    with pytest.raises(graft.GraftError, match="no-such-edit|unknown"):
        model.edit("no-such-edit")
    with pytest.raises(graft.GraftError, match="needs the parameter 'node'"):
        model.edit("bypass-node")
    before = model.info["graphs"][0]["ops"]
    result = model.edit("rename-value", value="logits", to="scores")
    assert "scores" in [o["name"] for o in model.info["outputs"]], result
    model.edit("fold-constants")
    model.edit("cleanup")
    assert model.info["graphs"][0]["ops"] == before
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16), dtype=np.float32)
    np.testing.assert_allclose(model.run({"x": x})["scores"], torch_reference(exports["module"], x),
                               rtol=1e-4, atol=1e-5)


def test_recipe_replays_on_another_export(exports, tmp_path):
    model = graft.load(exports["onnx"])
    model.edit("make-dim-dynamic", input="x", axis=0, symbol="batch")
    model.edit("rename-value", value="logits", to="scores")
    recipe = tmp_path / "recipe.json"
    model.save_recipe(recipe)
    steps = json.loads(recipe.read_text())["steps"]
    assert [s["edit"] for s in steps] == ["make-dim-dynamic", "rename-value"]
    again = graft.load(exports["onnx"])
    assert len(again.apply_recipe(recipe)) == 2
    assert again.info["outputs"][0]["name"] == "scores"
    assert again.info["inputs"][0]["shape"][0] == "batch"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"graft-recipe": 1, "steps": [{"edit": "bypass-node", "node": "/nowhere/Relu"}]}))
    with pytest.raises(graft.GraftError, match="nowhere"):
        graft.load(exports["onnx"]).apply_recipe(broken)


def test_render_svg_png_and_inline(exports, tmp_path):
    model = graft.load(exports["trace"])
    model.render(tmp_path / "cnn.svg")
    model.render(tmp_path / "cnn.png", expand_all=True, direction="LR")
    assert (tmp_path / "cnn.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "cnn.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in model._repr_svg_()
    with pytest.raises(graft.GraftError, match="picture|extension|format|\\.bmp"):
        model.render(tmp_path / "cnn.bmp")


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items()
                if k not in ("alignment_seconds", "seconds_a", "seconds_b")}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def test_diff_is_the_cli_json(exports):
    result = graft.diff(exports["script"], exports["trace"])
    cli = json.loads(run_cli("diff", exports["script"], exports["trace"], "--json").stdout)
    assert _without_timings(result) == _without_timings(cli)
    assert result["numeric"] is None
    x = np.random.default_rng(6).standard_normal((2, 3, 16, 16), dtype=np.float32)
    np.save(exports["folder"] / "x.npy", x)
    numeric = graft.diff(exports["trace"], exports["onnx"], {"x": x[:1]})
    cli = json.loads(run_cli("diff", exports["trace"], exports["onnx"], "--json",
                             "--input", f"x={exports['folder'] / 'x.npy'}").stdout)
    assert numeric["numeric"]["runs"][0]["outputs_close"] is True or cli["numeric"] is not None
    # random inputs at two shapes: one run each
    runs = graft.diff(exports["trace"], exports["script"], random=True, shapes={"x": [(1, 3, 16, 16), (2, 3, 8, 8)]})
    assert [r["inputs"] for r in runs["numeric"]["runs"]] == ["x: 1×3×16×16", "x: 2×3×8×8"]
    assert all(r["outputs_close"] for r in runs["numeric"]["runs"])
    assert runs["equivalent"] is True
    with pytest.raises(graft.GraftError, match="was not given|random"):
        graft.diff(exports["trace"], exports["script"], {})


def test_convert_torchscript_to_onnx(exports, tmp_path):
    target = tmp_path / "converted.onnx"
    onnx_model = graft.convert(exports["trace"], target, shapes={"x": (1, 3, 16, 16)}, dynamic={"x": {0: "batch"}})
    assert onnx_model.format == "onnx"
    onnx.checker.check_model(onnx.load(target), full_check=True)
    session = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(7).standard_normal((4, 3, 16, 16), dtype=np.float32)
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: x})[0],
                               torch_reference(exports["module"], x), rtol=1e-4, atol=1e-5)
    assert graft.load(target).info["inputs"][0]["shape"][0] == "batch"
    with pytest.raises(ValueError, match="give 'y' a shape"):
        graft.convert(exports["trace"], tmp_path / "bad.onnx", dynamic={"y": {0: "batch"}})
    with pytest.raises(graft.GraftError):
        graft.convert(exports["onnx"], tmp_path / "again.onnx")


def test_convert_torchscript_to_pt2(exports, tmp_path):
    """graft.convert(…, "m.pt2") writes a torch.export program from the traced
    and the scripted CNN; torch.export.load reads it and its module() equals
    the eager model at the export batch and at another in the range."""
    for kind in ("trace", "script"):
        target = tmp_path / f"converted_{kind}.pt2"
        program = graft.convert(exports[kind], target, shapes={"x": (1, 3, 16, 16)},
                                dynamic={"x": {0: ("batch", 1, 8)}})
        assert program.format == "exported_program"
        ep = torch.export.load(str(target))
        for batch in (1, 5):
            x = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16), dtype=np.float32)
            with torch.no_grad():
                got = ep.module()(torch.from_numpy(x)).numpy()
            np.testing.assert_allclose(got, torch_reference(exports["module"], x), rtol=1e-4, atol=1e-5)
        ranges = {str(k): (int(v.lower), int(v.upper)) for k, v in ep.range_constraints.items()}
        assert (1, 8) in ranges.values() or (2, 8) in ranges.values(), ranges
    with pytest.raises(ValueError, match="ONNX options"):
        graft.convert(exports["trace"], tmp_path / "bad.pt2", shapes={"x": (1, 3, 16, 16)}, opset=17)
    with pytest.raises(graft.GraftError):
        graft.convert(exports["trace"], tmp_path / "noshape.pt2")


class _Timestep(torch.nn.Module):
    def forward(self, x, t):
        return x * (t.float()[:, None] + 1.0)


def test_convert_with_input_dtypes(tmp_path):
    """A traced UNet's int64 timestep: dtypes= types it, as convert --dtype does."""
    x, t = torch.randn(2, 3), torch.tensor([3, 7])
    source = tmp_path / "t.pt"
    torch.jit.save(torch.jit.trace(_Timestep(), (x, t)), str(source))
    target = tmp_path / "t.onnx"
    graft.convert(source, target, shapes={"x": (2, 3), "t": (2,)}, dtypes={"t": "int64"})
    session = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    assert {i.name: i.type for i in session.get_inputs()}["t"] == "tensor(int64)"
    np.testing.assert_allclose(session.run(None, {"x": x.numpy(), "t": t.numpy()})[0],
                               _Timestep()(x, t).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="numeric type"):
        graft.convert(source, tmp_path / "bad.onnx", dtypes={"t": "int65"})


def test_help_reads_well():
    import pydoc
    text = pydoc.render_doc(graft, renderer=pydoc.plaintext)
    for name in ("load", "diff", "convert", "show", "compare_exports", "Model", "GraftError"):
        assert name in text
    assert graft.Model.run.__doc__ and "no copy" in graft.Model.run.__doc__
    stub = os.path.join(os.path.dirname(graft.__file__), "__init__.pyi")
    assert os.path.exists(stub) and os.path.exists(os.path.join(os.path.dirname(graft.__file__), "py.typed"))


def test_edit_that_fails_its_proof_is_undone(tmp_path):
    """A dim named batch must keep samples apart: a model that centres over
    the batch fails the proof, the edit is undone, and Graft says why."""
    import torch

    class CentreOverBatch(torch.nn.Module):
        def forward(self, x):
            return x - x.mean(0, keepdim=True)

    path = tmp_path / "centre.onnx"
    torch.onnx.export(CentreOverBatch(), (torch.randn(2, 4),), path, input_names=["x"], dynamo=False)
    model = graft.load(path)
    with pytest.raises(graft.GraftError, match="mixes samples.*undone"):
        model.edit("make-dim-dynamic", input="x", axis=0, symbol="batch")
    assert model.info["inputs"][0]["shape"] == [2, 4]
    forced = model.edit("make-dim-dynamic", input="x", axis=0, symbol="batch", force=True)
    assert forced.verified is False and any("FAILED" in line for line in forced.checks)
    assert model.info["inputs"][0]["shape"] == ["batch", 4]
    # without the proof: the same edit, nothing run
    unverified = graft.load(path)
    assert unverified.edit("make-dim-dynamic", input="x", axis=0, symbol="n", verify=False).verified is None
