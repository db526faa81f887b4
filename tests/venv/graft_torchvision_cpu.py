"""Lets torchvision's Python models import beside the CPU build of torch.

The torchvision 0.28.0 wheel on the machines' disk is a CUDA build: its
compiled operators (nms, roi_align, ...) do not load beside torch 2.13.0+cpu,
and importing it fails where it registers fake kernels for them ("operator
torchvision::nms does not exist"). Its models are plain Python. timm,
ultralytics and transformers import torchvision whenever it is installed, so
the test venv loads this module at start-up (graft-torchvision-cpu.pth) and
imports torchvision with torch.library.register_fake turned into a no-op for
the operators that do not exist. Calling those operators still fails, loudly.
"""
import importlib.abc
import importlib.machinery
import sys


class _PatchedLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        import torch
        original = torch.library.register_fake

        def register_fake(op, func=None, *args, **kwargs):
            try:
                return original(op, func, *args, **kwargs)
            except RuntimeError as e:
                if "does not exist" not in str(e):
                    raise
            except Exception:
                pass
            # the decorator form, for an operator this build does not have
            return (lambda f: f) if func is None else None

        def register_fake_lazily(op, func=None, *args, **kwargs):
            if func is not None:
                return register_fake(op, func, *args, **kwargs)

            def decorate(f):
                try:
                    return original(op, *args, **kwargs)(f)
                except Exception:
                    return f
            return decorate

        torch.library.register_fake = register_fake_lazily
        try:
            self._loader.exec_module(module)
        finally:
            torch.library.register_fake = original


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torchvision":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchedLoader(spec.loader)
        return spec


def install():
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
