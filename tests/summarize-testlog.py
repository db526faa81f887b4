#!/usr/bin/python3
"""Counts test results from meson's testlog.json files.

A TAP test reports its own cases on stdout ("ok N ..." / "not ok N ...");
each counts. A test without TAP output counts once by its result."""
import json
import re
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        print(f"missing test log {path}", file=sys.stderr)
        failed += 1
        continue
    for line in lines:
        if not line.strip():
            continue
        entry = json.loads(line)
        result = entry.get("result")
        cases = 0
        if entry.get("protocol") == "tap":
            for out in (entry.get("stdout") or "").splitlines():
                m = re.match(r"^(not ok|ok)\b(.*)", out)
                if not m:
                    continue
                cases += 1
                if "# SKIP" in m.group(2).upper():
                    skipped += 1
                elif m.group(1) == "ok" or "# TODO" in m.group(2).upper():
                    passed += 1
                else:
                    failed += 1
        if cases == 0 or result not in ("OK", "SKIP", "EXPECTEDFAIL"):
            if result in ("OK", "EXPECTEDFAIL"):
                passed += 1 if cases == 0 else 0
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
