"""TAP output for the Python test scripts: numbered results with the
details of each as '#' lines, skips that say why, and the plan line."""
import subprocess
import sys

_count = 0


def tap(ok, text, details=""):
    global _count
    _count += 1
    print(f"{'ok' if ok else 'not ok'} {_count} - {text}")
    for line in str(details).splitlines()[:40]:
        print(f"# {line}")
    sys.stdout.flush()
    return ok


def skip(text):
    global _count
    _count += 1
    print(f"ok {_count} - # SKIP {text}")
    sys.stdout.flush()


def count():
    return _count


def plan():
    print(f"1..{_count}")


def run(args, **kw):
    """A child process, its output captured as text."""
    return subprocess.run(args, capture_output=True, text=True, **kw)
