"""The output folder of a fixture generator, rewritten only when the
generator changes: a stamp in the folder holds the script's digest."""
import hashlib
import os
import sys


def output_dir(script):
    """OUTDIR (sys.argv[1]), made; exits at once when it holds the files of
    this version of script already."""
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if os.path.exists(_stamp(out)) and open(_stamp(out)).read() == _digest(script):
        sys.exit(0)
    return out


def done(out, script):
    """Marks OUTDIR as holding the files of this version of script."""
    with open(_stamp(out), "w") as f:
        f.write(_digest(script))


def _stamp(out):
    return os.path.join(out, ".stamp")


def _digest(script):
    with open(script, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
