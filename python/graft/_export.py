"""Exports of a live nn.Module, and compare_exports: every exporter's
result compared with every other in Graft. PyTorch (and onnx/onnxscript
for the ONNX export) are imported only here, when these are called."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ._graft import GraftError
from ._model import diff, load


@dataclass
class Export:
    """One export of a module: ``path`` when it worked, else ``error``."""

    method: str
    path: str | None = None
    error: str | None = None
    how: str = ""


def _as_tuple(example_inputs: Any) -> tuple:
    return tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)


def _first_line(exception: BaseException) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exception)).strip().splitlines()
    return f"{type(exception).__name__}: {text[0] if text else ''}"


def _dynamic_axes(example: tuple, other: tuple | None) -> list[dict[int, str]]:
    """Per input, the axes whose size differs between the example and the
    other inputs: those must stay dynamic in the exports."""
    axes = []
    for index, tensor in enumerate(example):
        changed: dict[int, str] = {}
        if other is not None and hasattr(tensor, "shape") and hasattr(other[index], "shape"):
            for axis, (a, b) in enumerate(zip(tensor.shape, other[index].shape)):
                if a != b:
                    changed[axis] = f"input{index}_dim{axis}"
        axes.append(changed)
    return axes


def _export_program(module, example: tuple, axes: list[dict[int, str]], path: str) -> None:
    import torch
    dynamic_shapes = None
    if any(axes):
        dynamic_shapes = tuple({axis: torch.export.Dim.AUTO for axis in changed} or None for changed in axes)
    program = torch.export.export(module, example, dynamic_shapes=dynamic_shapes)
    torch.export.save(program, path)


def _export_onnx(module, example: tuple, axes: list[dict[int, str]], path: str) -> str:
    import torch
    names = [f"input{index}" for index in range(len(example))]
    dynamic_axes = {name: changed for name, changed in zip(names, axes) if changed} or None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, example, path, input_names=names, dynamo=True, dynamic_axes=dynamic_axes,
                              verbose=False)
        return "torch.onnx.export (dynamo)"
    except Exception as dynamo_error:  # noqa: BLE001 - the other exporter is the fallback
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(module, example, path, input_names=names, dynamo=False,
                                  dynamic_axes=dynamic_axes)
            return f"torch.onnx.export (TorchScript exporter; dynamo failed: {_first_line(dynamo_error)})"
        except Exception:
            raise dynamo_error


def _make_export(method: str, module, example: tuple, axes, folder: str) -> Export:
    import torch
    suffix = {"trace": ".pt", "script": ".pt", "export": ".pt2", "onnx": ".onnx"}[method]
    # The file is named after the module: the window's title says what it shows.
    path = os.path.join(folder, f"{type(module).__name__}-{method}{suffix}")
    how = ""
    # An exporter that fails prints its graph and advice: the failure's
    # first line is what the result keeps.
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            if method == "trace":
                torch.jit.save(torch.jit.trace(module, example, check_trace=False), path)
                how = "torch.jit.trace"
            elif method == "script":
                torch.jit.save(torch.jit.script(module), path)
                how = "torch.jit.script"
            elif method == "export":
                _export_program(module, example, axes, path)
                how = "torch.export.export"
            else:
                how = _export_onnx(module, example, axes, path)
    except Exception as error:  # noqa: BLE001 - an exporter's failure is a result here
        return Export(method, error=_first_line(error))
    return Export(method, path=path, how=how)


def export_module(module, example_inputs: Any, folder: str | None = None) -> Export:
    """Exports a live module for Graft: ``torch.export`` (a ``.pt2``)
    first, and ``torch.jit.trace`` when that fails. ``Export.how`` says
    which was used and why."""
    folder = folder or tempfile.mkdtemp(prefix="graft-export-")
    example = _as_tuple(example_inputs)
    module.eval()
    exported = _make_export("export", module, example, [{} for _ in example],
                            tempfile.mkdtemp(prefix="module-", dir=folder))
    if exported.path is not None:
        exported.how = "exported with torch.export"
        return exported
    traced = _make_export("trace", module, example, None, tempfile.mkdtemp(prefix="module-", dir=folder))
    if traced.path is None:
        raise GraftError(f"cannot export the module: torch.export failed ({exported.error}), "
                         f"and so did torch.jit.trace ({traced.error})")
    traced.how = f"torch.export failed ({exported.error}); traced with torch.jit.trace instead"
    return traced


@dataclass
class PairResult:
    """Two exports compared at one set of inputs."""

    a: str
    b: str
    inputs: str                     # "example" or "other"
    agree: bool
    structure: str                  # Graft's one-line structural summary
    outputs_close: bool | None
    max_abs: float | None           # over the outputs
    first_divergence: str | None    # "node (value) ↔ node (value): max abs …"
    diff: dict[str, Any] = field(repr=False, default_factory=dict)


def _describe_divergence(run: dict[str, Any]) -> str | None:
    first = run.get("first_divergent")
    if first is None:
        if run.get("error_a") or run.get("error_b"):
            return f"A fails: {run['error_a']}" if run.get("error_a") else f"B fails: {run['error_b']}"
        return None
    node_a = (first.get("node_a") or {}).get("name") or first["a"]
    node_b = (first.get("node_b") or {}).get("name") or first["b"]
    if "shape_a" in first:
        return f"{node_a} ({first['a']}) ↔ {node_b} ({first['b']}): shape {first['shape_a']} vs {first['shape_b']}"
    return f"{node_a} ({first['a']}) ↔ {node_b} ({first['b']}): max abs {first['max_abs']:.3g}"


@dataclass
class ExportComparison:
    """The result of :func:`graft.compare_exports`: the exports, and every
    pair compared in Graft (structure and numbers) at the example inputs
    and, when given, at the other inputs. ``graft.show(result)`` opens the
    compare window on the first pair that disagrees."""

    exports: dict[str, Export]
    rows: list[PairResult]

    def first_disagreement(self) -> PairResult | None:
        """The first pair whose outputs differ, or None when all agree."""
        return next((row for row in self.rows if not row.agree), None)

    def table(self) -> str:
        """One line per pair and inputs: agree or not, the largest output
        difference, and the first divergent value (else the structural
        summary); then the exporters that failed, with their error."""
        lines = [f"{'A':<7} {'B':<7} {'inputs':<8} {'agree':<6} {'max abs':>9}  first divergence / structure"]
        for row in self.rows:
            magnitude = "-" if row.max_abs is None else f"{row.max_abs:.2e}"
            detail = row.first_divergence or row.structure
            lines.append(f"{row.a:<7} {row.b:<7} {row.inputs:<8} {'yes' if row.agree else 'NO':<6} {magnitude:>9}  {detail}")
        for export in self.exports.values():
            if export.path is None:
                lines.append(f"{export.method}: not exported ({export.error})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        import html
        cells = "".join(
            f"<tr><td>{row.a}</td><td>{row.b}</td><td>{row.inputs}</td><td>{'yes' if row.agree else '<b>no</b>'}</td>"
            f"<td>{'' if row.max_abs is None else f'{row.max_abs:.2e}'}</td>"
            f"<td>{html.escape(row.first_divergence or row.structure)}</td></tr>" for row in self.rows)
        failed = "".join(f"<p>{export.method}: not exported ({html.escape(export.error or '')})</p>"
                         for export in self.exports.values() if export.path is None)
        return ("<table><tr><th>A</th><th>B</th><th>inputs</th><th>agree</th><th>max abs</th>"
                f"<th>first divergence / structure</th></tr>{cells}</table>{failed}")


def _inputs_by_name(path: str, tensors: tuple) -> dict[str, np.ndarray]:
    """The tensors under the model's input names, in order."""
    names = [value["name"] for value in load(path).info["inputs"]]
    arrays = [t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t) for t in tensors]
    return dict(zip(names, arrays))


def compare_exports(module, example_inputs: Any, other_inputs: Any = None, *,
                    methods: Sequence[str] = ("trace", "script", "export", "onnx"), rtol: float = 1e-4,
                    atol: float = 1e-5, folder: str | None = None) -> ExportComparison:
    """Exports a live module every way PyTorch can — ``torch.jit.trace``,
    ``torch.jit.script``, ``torch.export`` and ``torch.onnx.export`` — and
    compares each pair in Graft: the structure (``graft.diff``) and the
    numbers at ``example_inputs`` and, when given, at ``other_inputs``
    (other sizes: where a trace baked a shape or a branch, the exports part
    there). Dims that differ between the two sets of inputs are kept
    dynamic in the torch.export and ONNX exports.

    Returns an :class:`ExportComparison` whose ``table()`` says which pairs
    agree and where the first divergence is.
    """
    folder = folder or tempfile.mkdtemp(prefix="graft-exports-")
    example = _as_tuple(example_inputs)
    other = _as_tuple(other_inputs) if other_inputs is not None else None
    module.eval()
    axes = _dynamic_axes(example, other)
    exports = {method: _make_export(method, module, example, axes, folder) for method in methods}
    rows = []
    settings = [("example", example)] + ([("other", other)] if other is not None else [])
    for (name_a, export_a), (name_b, export_b) in itertools.combinations(exports.items(), 2):
        if export_a.path is None or export_b.path is None:
            continue
        for label, tensors in settings:
            try:
                result = diff(export_a.path, export_b.path, _inputs_by_name(export_a.path, tensors),
                              rtol=rtol, atol=atol)
            except GraftError as error:
                rows.append(PairResult(name_a, name_b, label, False, str(error), None, None, str(error)))
                continue
            outputs_a = {value["name"] for value in load(export_a.path).info["outputs"]}
            run = result["numeric"]["runs"][0]
            output_errors = [v["max_abs"] for v in run["values"] if v["a"] in outputs_a and v["max_abs"] is not None]
            rows.append(PairResult(name_a, name_b, label, bool(run["outputs_close"]), result["summary"],
                                   bool(run["outputs_close"]), max(output_errors) if output_errors else None,
                                   _describe_divergence(run), result))
    return ExportComparison(exports, rows)
