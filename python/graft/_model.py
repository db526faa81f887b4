"""Models, runs, edits, diffs and conversions: the verbs of graft-cli."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, Union

import numpy as np

from . import _graft

PathLike = Union[str, "os.PathLike[str]"]
Shape = Sequence[Union[int, str]]


@dataclass
class EditResult:
    """What one :meth:`Model.edit` did.

    ``description`` is the edit as the Undo menu names it, ``notes`` what it
    did beyond the obvious (one line each), ``checks`` the runs at other
    sizes that proved an edit of input dims, and ``verified`` whether that
    proof passed completely (``None`` when the edit changed no input dim).
    """

    description: str
    notes: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    verified: bool | None = None


def _array_from_output(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_array_from_output(item) for item in value]
    if isinstance(value, tuple):  # strings: (values, shape)
        strings, shape = value
        return np.array(strings, dtype=object).reshape(shape)
    return np.asarray(value)


def _key(key: Any) -> Any:
    return key.item() if isinstance(key, np.ndarray) and key.ndim == 0 else key


def _contiguous(name: str, value: Any) -> Any:
    """An array Graft can read in place: no copy when it is already one."""
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"input '{name}': Graft reads numeric arrays, not {array.dtype}")
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return array


class Model:
    """A model file read by Graft: ONNX, TorchScript, torch.export ``.pt2``, ...

    Made by :func:`graft.load` (or :meth:`to_onnx`, :func:`graft.convert`).
    Edits change the model in memory; :meth:`save` writes it as ONNX.
    In Jupyter a Model shows itself as its graph (``_repr_svg_``).
    """

    def __init__(self, native: _graft.Model):
        self._native = native

    def __repr__(self) -> str:
        info = self.info
        graphs = info.get("graphs") or [{}]
        return (f"<graft.Model {info.get('format')} {self.path!r}: "
                f"{len(info.get('inputs', []))} inputs, {len(info.get('outputs', []))} outputs, "
                f"{graphs[0].get('nodes', 0)} nodes>")

    @property
    def path(self) -> str | None:
        """The file the model was read from."""
        return self._native.path

    @property
    def format(self) -> str:
        """``onnx``, ``torchscript``, ``exported_program``, ``state_dict``, ..."""
        return self._native.format

    @property
    def info(self) -> dict[str, Any]:
        """The object ``graft-cli info --json`` prints: format, producer,
        opsets, inputs and outputs with dtypes and shapes, op histogram."""
        return json.loads(self._native.info_json())

    def lint(self, *, onnx_export: bool = False, target_opset: int | None = None) -> list[dict[str, Any]]:
        """The diagnostics of ``graft-cli lint --json``: unsupported ops,
        static input dims, baked shape constants, trace hazards.

        Each is a dict with ``rule``, ``severity`` (``error``, ``warning``,
        ``info``), ``node``, ``value`` and ``message``. ``onnx_export``: the
        TorchScript model is meant for ``torch.onnx.export``;
        ``target_opset``: it is to be converted to ONNX at that opset.
        """
        text = self._native.lint_json(onnx_export=onnx_export, target_opset=target_opset or 0)
        return json.loads(text)["diagnostics"]

    def run(self, inputs: Mapping[str, Any] | None = None, *, threads: int = 1, random: bool = False,
            seed: int = 0, dims: Mapping[str, int] | None = None, precision: str = "f32") -> dict[str, np.ndarray]:
        """Runs the model in Graft's CPU runtime.

        ``inputs`` maps input names to arrays (anything ``numpy.asarray``
        takes; a C-contiguous array is read in place, without a copy). With
        ``random=True`` the inputs not given are random data of their
        declared shapes, symbolic dims taken from ``dims``
        (``{"batch": 2}``). Returns the outputs by name, in graph order, as
        arrays over the runtime's own buffers (no copy); ``bfloat16`` and
        narrower float outputs come back as float32, string outputs as
        object arrays, sequences as lists, TorchScript dicts as dicts.
        ``precision="bf16"`` multiplies by the weights in bfloat16 with
        float32 sums (CPUs with AVX512_BF16; elsewhere GraftError says
        why), as ``graft-cli run --precision bf16`` does.
        """
        arrays = {name: _contiguous(name, value) for name, value in (inputs or {}).items()}
        outputs = self._native.run(arrays, threads=threads, random=random, seed=seed, dims=dict(dims or {}),
                                   precision=precision)
        result = {name: _array_from_output(value) for name, value in outputs.items()}
        if any(isinstance(value, list) for value in result.values()):
            # TorchScript's Dict outputs run as key, value, key, value...
            for declared in self.info["outputs"]:
                value = result.get(declared["name"])
                if str(declared.get("type", "")).startswith("Dict[") and isinstance(value, list):
                    result[declared["name"]] = {_key(k): v for k, v in zip(value[::2], value[1::2])}
        return result

    def edit(self, op: str, /, *, verify: bool = True, force: bool = False, **params: Any) -> EditResult:
        """Applies one edit of Graft's edit table (``graft.edit_operations()``).

        ``op`` is the id ``graft-cli edit`` and recipes use (``_`` may stand
        for ``-``): ``make-dim-dynamic`` (``input``, ``axis``, ``symbol``),
        ``set-input-shape`` (``input``, ``dims``), ``bypass-node`` /
        ``delete-node`` (``node``), ``extract`` (``inputs``, ``outputs``),
        ``rename-node`` (``node``, ``to``), ``fold-constants``, ``cleanup``,
        ``float16``, ``replace-pattern`` ... with their parameters as
        keywords (str, int, float, bool, or a list of str or int).

        An edit of input dims is then run at other sizes (``verify``); when
        that fails the edit is undone and GraftError says why, unless
        ``force``.
        """
        description, notes, checks, verified = self._native.edit(op.replace("_", "-"), params, verify, force)
        return EditResult(description, list(notes), list(checks), verified)

    def apply_recipe(self, path: PathLike) -> list[str]:
        """Replays a recipe (``graft-cli edit --save-recipe``, the GUI's
        Save Recipe) on this model; returns the edits applied. A step that
        finds no target fails with GraftError naming it."""
        return self._native.apply_recipe(os.fspath(path))

    def save_recipe(self, path: PathLike) -> None:
        """Saves the edits applied through this object as a recipe."""
        self._native.save_recipe(os.fspath(path))

    def save(self, path: PathLike, *, overwrite: bool = False) -> None:
        """Writes the model in the format ``path``'s extension names: ONNX,
        or ``.pt2`` for a torch.export program (edited or not; a program
        saved as ``.onnx`` must go through ``to_onnx`` first). Atomic (the
        old file stays whole if anything fails). Refuses formats Graft only
        reads (``.pt``), and to replace the file it was read from unless
        ``overwrite``."""
        self._native.save(os.fspath(path), overwrite)

    def to_onnx(self, *, shapes: Mapping[str, Shape] | None = None,
                dynamic: Mapping[str, Mapping[int, str]] | None = None, opset: int | None = None,
                allow_custom: bool = False, dtypes: Mapping[str, str] | None = None) -> "Model":
        """A TorchScript or torch.export model lowered to ONNX, without
        PyTorch (``graft-cli convert``). ``shapes`` gives input shapes
        (TorchScript declares none), ``dynamic`` names the dims to keep
        symbolic: ``{"x": {0: "batch"}}``, ``dtypes`` the element types of
        inputs that are not float32: ``{"t": "int64"}``."""
        native = self._native.to_onnx(shapes=_merge_dynamic(shapes, dynamic), opset=opset or 0,
                                      allow_custom=allow_custom, dtypes=dict(dtypes or {}))
        return Model(native)

    def to_pt2(self, *, shapes: Mapping[str, Shape] | None = None,
               dynamic: Mapping[str, Mapping[int, str | tuple[str, int, int | None]]] | None = None,
               dtypes: Mapping[str, str] | None = None) -> "Model":
        """A TorchScript model as a torch.export program, without PyTorch
        (``graft-cli convert IN.pt -o OUT.pt2``): ``shapes`` gives the
        export sizes of the inputs (all fixed), ``dynamic`` the dims to free
        with their ranges: ``{"x": {0: ("batch", 1, 64)}}`` (or just
        ``"batch"``: from 1, unbounded), checked in Graft's runtime at
        other sizes in the range. Save the result with ``.save("m.pt2")``."""
        dims = []
        for name, axes in (dynamic or {}).items():
            for axis, spec in axes.items():
                symbol, low, high = (spec, 1, None) if isinstance(spec, str) else tuple(spec)
                dims.append((name, axis, symbol, low, -1 if high is None else high))
        native = self._native.to_pt2(shapes={k: list(v) for k, v in (shapes or {}).items()}, dynamic=dims,
                                     dtypes=dict(dtypes or {}))
        return Model(native)

    def render(self, path: PathLike, *, expand_all: bool = False, direction: str = "TB", shapes: bool = True,
               attributes: bool = True, names: bool = False, dark: bool = False) -> None:
        """Draws the graph, grouped by module, to ``.svg``, ``.png`` or
        ``.pdf`` (``graft-cli render``)."""
        self._native.render(os.fspath(path), expand_all=expand_all, direction=direction, shapes=shapes,
                            attributes=attributes, names=names, dark=dark)

    def to_svg(self, **options: Any) -> str:
        """The picture of :meth:`render` as SVG text."""
        with tempfile.TemporaryDirectory(prefix="graft-") as folder:
            target = os.path.join(folder, "model.svg")
            self.render(target, **options)
            with open(target, encoding="utf-8") as picture:
                return picture.read()

    def _repr_svg_(self) -> str:
        return self.to_svg()


def _merge_dynamic(shapes: Mapping[str, Shape] | None,
                   dynamic: Mapping[str, Mapping[int, str]] | None) -> dict[str, list[int | str]]:
    merged = {name: list(shape) for name, shape in (shapes or {}).items()}
    for name, axes in (dynamic or {}).items():
        if name not in merged:
            raise ValueError(f"dynamic: give '{name}' a shape first (shapes={{'{name}': (...)}})")
        for axis, symbol in axes.items():
            symbol = symbol if isinstance(symbol, str) else symbol[0]   # ("batch", min, max): ONNX keeps the name
            if not 0 <= axis < len(merged[name]):
                raise ValueError(f"dynamic: '{name}' has {len(merged[name])} dims, no axis {axis}")
            merged[name][axis] = symbol
    return merged


def load(path: PathLike) -> Model:
    """Reads any model file Graft opens (chosen by content, not extension):
    ONNX, TorchScript (traced or scripted), torch.export ``.pt2``,
    ExecuTorch ``.pte``, state_dicts. Raises GraftError with Graft's
    message when it cannot."""
    return Model(_graft.load(os.fspath(path)))


def _as_model(model: Model | PathLike) -> Model:
    return model if isinstance(model, Model) else load(model)


def _shape_text(shape: Iterable[int]) -> str:
    return "x".join(str(int(d)) for d in shape)


def diff(a: Model | PathLike, b: Model | PathLike, inputs: Mapping[str, Any] | None = None, *,
         random: bool = False, seed: int = 0, dims: Mapping[str, int | Sequence[int]] | None = None,
         shapes: Mapping[str, Sequence[int] | Sequence[Sequence[int]]] | None = None,
         rtol: float = 1e-5, atol: float = 1e-5) -> dict[str, Any]:
    """Compares two models (a trace and a script of one module, a
    TorchScript model and its ONNX export, a model and an edit of it):
    the object ``graft-cli diff --json`` prints.

    The graphs are always aligned and compared structurally. With
    ``inputs`` (arrays by input name of either model) or ``random=True``
    both also run in Graft's runtime and their outputs and matched
    intermediates are compared (``numeric``), once per setting: ``dims``
    ``{"batch": [2, 5]}`` and ``shapes`` ``{"x": [(2, 4), (5, 4)]}`` give
    one run per value. ``result["equivalent"]`` is the verdict.
    """
    model_a, model_b = _as_model(a), _as_model(b)
    if model_a is model_b:
        model_b = load(model_a.path)
    dim_specs = [f"{name}={','.join(str(int(v)) for v in (values if isinstance(values, (list, tuple)) else [values]))}"
                 for name, values in (dims or {}).items()]
    shape_specs = []
    for name, value in (shapes or {}).items():
        runs = value if value and isinstance(value[0], (list, tuple)) else [value]
        shape_specs.append(f"{name}={','.join(_shape_text(s) for s in runs)}")
    arrays = None if inputs is None else {name: _contiguous(name, v) for name, v in inputs.items()}
    numeric = random or arrays is not None
    text = _graft.diff_json(model_a._native, model_b._native, arrays if numeric else None, random, seed,
                            dim_specs, shape_specs, rtol, atol)
    return json.loads(text)


def convert(src: Model | PathLike, dst: PathLike, *, shapes: Mapping[str, Shape] | None = None,
            dynamic: Mapping[str, Mapping[int, str]] | None = None, opset: int | None = None,
            allow_custom: bool = False, overwrite: bool = False, dtypes: Mapping[str, str] | None = None) -> Model:
    """TorchScript (or torch.export) to ONNX without PyTorch, as
    ``graft-cli convert``: writes ``dst`` and returns the ONNX model; or,
    when ``dst`` ends in ``.pt2``, TorchScript to a torch.export program
    (:meth:`Model.to_pt2`: ``dynamic={"x": {0: ("batch", 1, 64)}}``).

    ``shapes={"x": (1, 3, 224, 224)}`` gives input shapes (TorchScript
    declares none), ``dynamic={"x": {0: "batch"}}`` keeps a dim symbolic
    in the file, ``dtypes={"t": "int64"}`` types an input that is not
    float32. Raises GraftError naming every op without a lowering
    (``allow_custom=True`` writes them as ``aten`` nodes instead).
    """
    if os.fspath(dst).lower().endswith(".pt2"):
        if opset is not None or allow_custom:
            raise ValueError("convert to .pt2: opset and allow_custom are ONNX options")
        program = _as_model(src).to_pt2(shapes=shapes, dynamic=dynamic, dtypes=dtypes)
        program.save(dst, overwrite=overwrite)
        return program
    onnx = _as_model(src).to_onnx(shapes=shapes, dynamic=dynamic, opset=opset, allow_custom=allow_custom,
                                  dtypes=dtypes)
    onnx.save(dst, overwrite=overwrite)
    return onnx


def edit_operations() -> list[str]:
    """The ids :meth:`Model.edit` takes, in the order of Graft's edit table."""
    return _graft.edit_operations()
