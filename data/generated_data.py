"""Shared by the data/make-*.py scripts: write a generated data file, or
check (--check) that the shipped one is what the pinned package gives."""
import sys


def write_or_check(text, source):
    """text: the file's content; source: "torch 2.13.0", named in the error."""
    check = sys.argv[1] == "--check"
    path = sys.argv[2] if check else sys.argv[1]
    script = sys.argv[0].rsplit("/", 1)[-1]
    if check:
        with open(path, encoding="utf-8") as shipped:
            if shipped.read() != text:
                sys.exit(f"{path} differs from the schemas of {source}: regenerate it with data/{script}")
        print(f"{path} matches {source}")
        return
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
