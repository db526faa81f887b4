"""Graft from Python: look at, check, run, edit, compare and convert the
models you ship from PyTorch.

    import graft
    model = graft.load("model.onnx")      # ONNX, TorchScript, torch.export .pt2
    model.info                            # inputs, outputs, opsets, ops (info --json)
    model.lint()                          # unsupported ops, static dims, trace hazards
    outputs = model.run({"x": array})     # Graft's CPU runtime, NumPy in and out
    model.edit("make-dim-dynamic", input="x", axis=0, symbol="batch")
    model.save("dynamic.onnx")
    graft.diff("traced.pt", "scripted.pt", random=True)   # diff --json
    graft.convert("traced.pt", "model.onnx", shapes={"x": (1, 3, 224, 224)})
    graft.show(module, example_inputs)    # the Graft window, or inline SVG in Jupyter
    graft.compare_exports(module, example_inputs)   # trace, script, torch.export, ONNX

Every verb is the one graft-cli has, on the same library, and returns the
object its --json prints. Errors are GraftError with Graft's own message.
Nothing is downloaded: the extension, graft-cli and the Graft window come
in the wheel (pip install . from the repository).
"""

import os as _os
import sys as _sys

# The extension carries Graft's guard around Graphviz's dot decompose()
# (layout/graphviz.c), which the dot plugin only binds to when the
# symbol is global, as it is in graft-cli and the GUI.
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | _os.RTLD_GLOBAL)
try:
    from . import _graft
finally:
    _sys.setdlopenflags(_flags)

from ._graft import GraftError
from ._model import EditResult, Model, convert, diff, edit_operations, load
from ._show import show
from ._export import ExportComparison, compare_exports, export_module

__version__ = _graft.version

__all__ = [
    "GraftError",
    "Model",
    "EditResult",
    "ExportComparison",
    "load",
    "diff",
    "convert",
    "edit_operations",
    "show",
    "compare_exports",
    "export_module",
]
