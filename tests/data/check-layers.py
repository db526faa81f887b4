#!/usr/bin/env python3
"""Every arrow points down: each folder of model/ (and layout/) includes
only its own headers and those of the layers below it, and nothing below
app/ includes GTK. TAP, one case per folder.

    check-layers.py SOURCE_ROOT
"""
import os
import re
import sys

# A folder may include itself and what is listed here (and, transitively,
# nothing else: each list is complete, so a new arrow is a deliberate edit).
BELOW = {
    "model/ir": [],
    "model/onnx": ["ir"],
    "model/pytorch": ["ir"],
    "model/torchscript": ["ir", "pytorch"],
    "model/pt2": ["ir", "pytorch"],
    "model/pte": ["ir", "pytorch"],
    "model/runtime": ["ir", "onnx"],
    "model/analysis": ["ir", "onnx", "runtime"],
    "model/edit": ["ir", "onnx", "pytorch", "runtime", "analysis"],
    "model/lower": ["ir", "onnx", "runtime", "analysis"],
    "model/lint": ["ir", "onnx", "pte", "runtime", "analysis", "edit", "lower"],
    "model/compare": ["ir", "onnx", "runtime", "analysis", "edit", "lower", "lint"],
    "model/debug": ["ir", "onnx", "pytorch", "torchscript", "pt2", "runtime", "analysis", "edit", "lower", "lint",
                    "compare", "loader.h"],
    "model/report": ["ir", "onnx", "runtime", "analysis", "edit", "lower", "lint", "compare", "debug"],
    "layout": ["ir", "runtime", "analysis"],
}
# loader.c and formats.c sit above the readers and writers.
TOP_FILES = {
    "model/loader.c": ["ir", "onnx", "pytorch", "torchscript", "pt2", "pte", "loader.h"],
    "model/formats.c": ["ir", "onnx", "pt2", "formats.h"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^">]+)[">]', re.M)
GUI = ("gtk/", "adwaita", "gdk/")


def includes(path):
    with open(path, encoding="utf-8") as f:
        for quote, name in INCLUDE.findall(f.read()):
            yield quote, name


def violations(root, rel, allowed, own):
    found = []
    for quote, name in includes(os.path.join(root, rel)):
        if quote == "<":
            if name.startswith(GUI):
                found.append("%s includes <%s>: no GTK below app/ and widgets/" % (rel, name))
            continue
        top = name.split("/")[0] if "/" in name else name
        if top == own or top in allowed:
            continue
        # Unqualified names are the folder's own or generated in the build
        # (onnx.pb-c.h, *-resources.h, graft-config.h).
        if "/" in name:
            found.append("%s includes \"%s\": %s/ is not below %s" % (rel, name, top, os.path.dirname(rel)))
    return found


def sources(root, folder):
    for dirpath, _, names in os.walk(os.path.join(root, folder)):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(dirpath, n), root)


def main():
    root = sys.argv[1]
    cases = []
    for folder, allowed in BELOW.items():
        own = folder.split("/")[-1]
        bad = [v for rel in sources(root, folder) for v in violations(root, rel, allowed, own)]
        cases.append((folder, bad))
    for rel, allowed in TOP_FILES.items():
        cases.append((rel, violations(root, rel, allowed, None)))
    print("1..%d" % len(cases))
    failed = 0
    for k, (what, bad) in enumerate(cases, 1):
        if bad:
            failed += 1
            print("not ok %d - %s" % (k, what))
            for line in bad:
                print("#   " + line)
        else:
            print("ok %d - %s" % (k, what))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
