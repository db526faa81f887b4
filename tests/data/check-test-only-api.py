#!/usr/bin/env python3
"""No product function exists only for the tests: every graft_* function
declared in a header of app/, widgets/, model/, layout/ or python/ has a
caller in those folders. A function only tests call is a test switch in
the product (tests read what the user sees instead: widgets, properties,
the library functions the product itself calls). TAP, one case per
folder, and one for the list of known exceptions (KNOWN).

    check-test-only-api.py SOURCE_ROOT          TAP
    check-test-only-api.py SOURCE_ROOT --list   every such function (known
                                                ones too) and where tests
                                                call it
"""
import os
import re
import sys

PRODUCT = ["app", "widgets", "model", "layout", "python"]
# Known, each with why it stays for now; app/ and widgets/ have none. A
# function that gains a product caller must leave this list (the check
# says so), and a new test-only function fails until it is removed or
# listed here with its reason.
KNOWN = {
    # The model library's in-memory entry points: the product reads and
    # writes files only, the fuzz harnesses get libFuzzer's bytes and round
    # trip them without a file per input.
    "graft_onnx_read_bytes": "reads a model from memory; the fuzz harnesses' entry",
    "graft_onnx_model_to_bytes": "writes a model to memory; the fuzz harnesses' round trip",
    # How the kernel tests run every instruction set in one process: they
    # compare a level's result with the portable path's on the same inputs
    # (test-vector-math, test-quantized), which GRAFT_SIMD, read once per
    # process, cannot do without passing the results between processes.
    "graft_simd_set_max_level": "caps the SIMD level in-process, as GRAFT_SIMD does at start",
    "graft_qgemm_u8s8": "the u8s8 tile kernels (vpmaddubsw, VNNI) over a plain a in one call, checked at every "
                        "level; qlinear.c's byte convolution packs its filter (a) and image panels itself and "
                        "drives the same kind through _graft_qgemm_run",
    # The baseline the hierarchical layout is measured against.
    "graft_layout_new_flat": "the whole graph in one dot run: layout-bench's 'flat' mode, which "
                             "bench-layout times against the group-by-group layout",
}
TESTS = ["tests"]
DECLARED = re.compile(r"\b(graft_[a-z0-9_]+)\s*\(")
WORD = re.compile(r"\bgraft_[a-z0-9_]+\b")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def sources(root, folders):
    for folder in folders:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, n), root)


def code(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return STRING.sub('""', COMMENT.sub(" ", f.read()))


def declarations(text):
    """Functions a header declares: a name followed by '(' at the top
    level of a statement that ends in ';' (a prototype), not a call
    inside a macro or an inline body."""
    names = set()
    depth = 0
    statement = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for ch in line + "\n":
            if ch == "{":
                depth += 1
                statement = []
            elif ch == "}":
                depth -= 1
                statement = []
            elif depth == 0:
                statement.append(ch)
                if ch == ";":
                    m = DECLARED.search("".join(statement))
                    if m:
                        names.add(m.group(1))
                    statement = []
    return names


def uses(text, definitions_too):
    """Names used in a file; a definition (the name at the start of a
    line, GNU style, or after its return type with a body following) is
    not a use of itself."""
    found = {}
    for line in text.splitlines():
        for m in WORD.finditer(line):
            name = m.group(0)
            if not definitions_too and line.startswith(name) and re.match(r"\s*\(", line[m.end():]):
                continue
            found[name] = found.get(name, 0) + 1
    return found


def main():
    root = sys.argv[1]
    listing = "--list" in sys.argv[2:]
    declared = {}
    product_uses = {}
    for rel in sources(root, PRODUCT):
        text = code(root, rel)
        if rel.endswith(".h"):
            for name in declarations(text):
                declared.setdefault(name, rel)
            # A header's own prototypes are not uses; its macros and
            # inline bodies are.
            counts = uses(text, True)
            for name in declarations(text):
                counts[name] = counts.get(name, 0) - 1
        else:
            counts = uses(text, False)
        for name, n in counts.items():
            product_uses[name] = product_uses.get(name, 0) + n
    test_callers = {}
    for rel in sources(root, TESTS):
        for name in uses(code(root, rel), True):
            test_callers.setdefault(name, []).append(rel)

    # G_DECLARE_* declares get_type; GRAFT_TYPE_* macros call it.
    unused = sorted(n for n in declared if product_uses.get(n, 0) <= 0 and not n.endswith("_get_type"))
    if listing:
        for name in unused:
            callers = test_callers.get(name, [])
            print("%s (%s): %s%s" % (name, declared[name], ", ".join(callers) if callers else "no caller at all",
                                    "; known: " + KNOWN[name] if name in KNOWN else ""))
        return 0
    stale = sorted(n for n in KNOWN if n not in unused)
    unused = [n for n in unused if n not in KNOWN]
    by_folder = {}
    for name in unused:
        folder = os.path.dirname(declared[name])
        by_folder.setdefault(folder, []).append(name)

    folders = sorted({os.path.dirname(h) for h in declared.values()})
    print("1..%d" % (len(folders) + 1))
    failed = 0
    for k, folder in enumerate(folders, 1):
        bad = by_folder.get(folder, [])
        if bad:
            failed += 1
            print("not ok %d - %s" % (k, folder))
            for name in bad:
                callers = test_callers.get(name)
                print("#   %s: %s" % (name, "only tests call it (%s)" % ", ".join(callers) if callers
                                      else "nothing calls it"))
        else:
            print("ok %d - %s" % (k, folder))
    # A known one that gained a product caller, or went: off the list.
    if stale:
        failed += 1
        print("not ok %d - the known list" % (len(folders) + 1))
        for name in stale:
            print("#   %s: no longer test-only (or gone); take it off KNOWN" % name)
    else:
        print("ok %d - the known list" % (len(folders) + 1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
