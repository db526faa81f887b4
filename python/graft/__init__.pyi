# Type hints of the graft package (the implementation is graft/_*.py over
# the _graft extension).
import os
import subprocess
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, Union

import numpy as np

PathLike = Union[str, os.PathLike[str]]
Shape = Sequence[Union[int, str]]

__version__: str

class GraftError(RuntimeError): ...

@dataclass
class EditResult:
    description: str
    notes: list[str]
    checks: list[str]
    verified: bool | None

class Model:
    @property
    def path(self) -> str | None: ...
    @property
    def format(self) -> str: ...
    @property
    def info(self) -> dict[str, Any]: ...
    def lint(self, *, onnx_export: bool = ..., target_opset: int | None = ...) -> list[dict[str, Any]]: ...
    def run(self, inputs: Mapping[str, Any] | None = ..., *, threads: int = ..., random: bool = ...,
            seed: int = ..., dims: Mapping[str, int] | None = ..., precision: str = ...) -> dict[str, np.ndarray]: ...
    def edit(self, op: str, /, *, verify: bool = ..., force: bool = ..., **params: Any) -> EditResult: ...
    def apply_recipe(self, path: PathLike) -> list[str]: ...
    def save_recipe(self, path: PathLike) -> None: ...
    def save(self, path: PathLike, *, overwrite: bool = ...) -> None: ...
    def to_onnx(self, *, shapes: Mapping[str, Shape] | None = ..., dynamic: Mapping[str, Mapping[int, str]] | None = ...,
                opset: int | None = ..., allow_custom: bool = ...) -> Model: ...
    def to_pt2(self, *, shapes: Mapping[str, Shape] | None = ...,
               dynamic: Mapping[str, Mapping[int, str | tuple[str, int, int | None]]] | None = ...,
               dtypes: Mapping[str, str] | None = ...) -> Model: ...
    def render(self, path: PathLike, *, expand_all: bool = ..., direction: str = ..., shapes: bool = ...,
               attributes: bool = ..., names: bool = ..., dark: bool = ...) -> None: ...
    def to_svg(self, **options: Any) -> str: ...
    def _repr_svg_(self) -> str: ...

def load(path: PathLike) -> Model: ...
def diff(a: Model | PathLike, b: Model | PathLike, inputs: Mapping[str, Any] | None = ..., *, random: bool = ...,
         seed: int = ..., dims: Mapping[str, int | Sequence[int]] | None = ...,
         shapes: Mapping[str, Sequence[int] | Sequence[Sequence[int]]] | None = ...,
         rtol: float = ..., atol: float = ...) -> dict[str, Any]: ...
def convert(src: Model | PathLike, dst: PathLike, *, shapes: Mapping[str, Shape] | None = ...,
            dynamic: Mapping[str, Mapping[int, str | tuple[str, int, int | None]]] | None = ...,
            opset: int | None = ..., allow_custom: bool = ..., overwrite: bool = ...,
            dtypes: Mapping[str, str] | None = ...) -> Model: ...
def edit_operations() -> list[str]: ...

@dataclass
class Export:
    method: str
    path: str | None
    error: str | None
    how: str

@dataclass
class PairResult:
    a: str
    b: str
    inputs: str
    agree: bool
    structure: str
    outputs_close: bool | None
    max_abs: float | None
    first_divergence: str | None
    diff: dict[str, Any]

@dataclass
class ExportComparison:
    exports: dict[str, Export]
    rows: list[PairResult]
    def first_disagreement(self) -> PairResult | None: ...
    def table(self) -> str: ...

def export_module(module: Any, example_inputs: Any, folder: str | None = ...) -> Export: ...
def compare_exports(module: Any, example_inputs: Any, other_inputs: Any = ..., *,
                    methods: Sequence[str] = ..., rtol: float = ..., atol: float = ...,
                    folder: str | None = ...) -> ExportComparison: ...
def show(obj: Any, example_inputs: Any = ..., *, window: bool | None = ...) -> subprocess.Popen[bytes] | Model: ...
