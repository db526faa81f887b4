#!/usr/bin/env python3
"""Counts test results from meson's testlog.json files.

A test that speaks TAP (GTest with --tap) reports its own cases on stdout
("ok N ..." / "not ok N ..."); each case counts, a SKIP or TODO as skipped. A test without TAP output
counts once by its result. A TAP test whose process failed although every
case it printed passed (crash after the last case, missing cases) counts
one extra failure."""
import json
import re
import sys

TAP_LINE = re.compile(r"^(not ok|ok)\s+\d+\b(.*)")

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
        ok = result in ("OK", "EXPECTEDFAIL")
        case_failures = cases = 0
        for out in (entry.get("stdout") or "").splitlines():
            m = TAP_LINE.match(out)
            if not m:
                continue
            cases += 1
            directive = m.group(2).upper()
            # A TODO (g_test_incomplete: a known gap, with its reason) is
            # not a pass: it counts with the skips.
            if "# SKIP" in directive or "# TODO" in directive:
                skipped += 1
            elif m.group(1) == "ok":
                passed += 1
            else:
                failed += 1
                case_failures += 1
        if cases == 0:
            if ok:
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
        elif not ok and result != "SKIP" and case_failures == 0:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
