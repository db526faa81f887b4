"""graft.show: the Graft window from Python, or the graph inline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from typing import Any

from ._model import Model, load

_show_folder: str | None = None


def _folder() -> str:
    """Where shown objects are written: one folder per interpreter, kept
    after it exits because the window may still be reading them."""
    global _show_folder
    if _show_folder is None:
        _show_folder = tempfile.mkdtemp(prefix="graft-show-")
    return _show_folder


def gui_path() -> str | None:
    """The Graft window's program: $GRAFT_GUI, else the one installed with
    this package (the wheel's scripts), else ``graft`` on PATH."""
    candidates = [os.environ.get("GRAFT_GUI"), os.path.join(sysconfig.get_path("scripts"), "graft"),
                  os.path.join(os.path.dirname(sys.executable), "graft"), shutil.which("graft")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _write_temporary(obj: Any, example_inputs: Any) -> tuple[str, str | None]:
    """A file for obj, and how it was made (None when obj was a file)."""
    if isinstance(obj, (str, os.PathLike)):
        return os.fspath(obj), None
    if isinstance(obj, Model):
        if obj.format == "onnx":
            path = os.path.join(_folder(), f"model-{id(obj)}.onnx")
            obj.save(path, overwrite=True)
            return path, "the model as it is now, saved as ONNX"
        return obj.path, None
    from ._export import ExportComparison, export_module
    if isinstance(obj, ExportComparison):
        raise TypeError("internal: comparisons are opened with --compare")
    module_name = type(obj).__module__
    if module_name.startswith("onnx"):
        import onnx
        path = os.path.join(_folder(), f"model-{id(obj)}.onnx")
        onnx.save(obj, path)
        return path, "onnx.ModelProto saved"
    import torch
    if isinstance(obj, torch.jit.ScriptModule):
        path = os.path.join(_folder(), f"model-{id(obj)}.pt")
        torch.jit.save(obj, path)
        return path, "TorchScript module saved"
    if isinstance(obj, torch.export.ExportedProgram):
        path = os.path.join(_folder(), f"model-{id(obj)}.pt2")
        torch.export.save(obj, path)
        return path, "ExportedProgram saved"
    if isinstance(obj, torch.nn.Module):
        if example_inputs is None:
            raise TypeError("graft.show(module, example_inputs): an nn.Module needs example inputs to be exported")
        exported = export_module(obj, example_inputs, _folder())
        return exported.path, exported.how
    raise TypeError(f"graft.show: cannot show {type(obj).__name__} (a path, graft.Model, onnx.ModelProto, "
                    "torch.jit.ScriptModule, torch.export.ExportedProgram or nn.Module with example inputs)")


def _launch(arguments: list[str]) -> subprocess.Popen:
    program = gui_path()
    if program is None:
        raise FileNotFoundError("the Graft window is not installed (pip install . from Graft's repository "
                                "installs it beside the package; $GRAFT_GUI names another one)")
    # The settings schema compiled into the package (a wheel has no place
    # in XDG_DATA_DIRS); one found elsewhere first still works.
    environment = dict(os.environ)
    package = os.path.dirname(os.path.abspath(__file__))
    if os.path.exists(os.path.join(package, "gschemas.compiled")):
        environment["GSETTINGS_SCHEMA_DIR"] = os.pathsep.join(
            filter(None, [package, environment.get("GSETTINGS_SCHEMA_DIR")]))
    # A session of its own: a Ctrl-C in the interpreter does not close the
    # window, and the interpreter's end neither.
    return subprocess.Popen([program, *arguments], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, env=environment)


def show(obj: Any, example_inputs: Any = None, *, window: bool | None = None) -> Any:
    """Shows a model in the Graft window, without blocking the interpreter.

    ``obj`` is a path, a :class:`graft.Model`, an ``onnx.ModelProto``, a
    ``torch.jit.ScriptModule``, a ``torch.export.ExportedProgram``, an
    ``nn.Module`` with ``example_inputs`` (exported with ``torch.export``
    first, falling back to ``torch.jit.trace``; it says which), or the
    result of :func:`graft.compare_exports` (the compare window on its
    first pair that disagrees).

    With a display (``window`` unset or True) it starts the window and
    returns its process (``subprocess.Popen``). Without one (a notebook on
    a server, ``window=False``) it returns the :class:`graft.Model`, which
    Jupyter draws inline as SVG with its module groups (a comparison: the
    comparison, which Jupyter shows as its table).
    """
    from ._export import ExportComparison
    if window is None:
        window = has_display()
    if isinstance(obj, ExportComparison):
        pair = obj.first_disagreement() or (obj.rows[0] if obj.rows else None)
        if pair is None:
            raise ValueError("the comparison has no pair of exports to show")
        if not window:
            return obj    # its table, inline
        print(f"graft: comparing {pair.a} and {pair.b}", file=sys.stderr)
        return _launch(["--compare", obj.exports[pair.a].path, obj.exports[pair.b].path])
    path, how = _write_temporary(obj, example_inputs)
    if how:
        print(f"graft: {how} ({path})", file=sys.stderr)
    if not window:
        return obj if isinstance(obj, Model) else load(path)
    return _launch([path])
