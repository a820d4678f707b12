#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints it as `go test -v` would, less
the === RUN/PAUSE/CONT lines; at the end, each failed test's own lines
again (its last 80), so that a failure's messages stand at the end of CI's
output, where a reader of its tail finds them: the integration tests run
about 30 minutes and print thousands of lines, and a subtest's messages,
streamed when it failed, were too far up for CI's excerpt to hold them.
Exits 0: the caller takes go test's status (pipefail)."""

import json
import sys

KEEP = 80  # lines of each failed test repeated at the end


def main():
    lines = {}  # test name -> its output lines, the last KEEP
    failed = []
    for raw in sys.stdin:
        try:
            ev = json.loads(raw)
        except ValueError:
            sys.stdout.write(raw)  # a build error, not an event
            continue
        test, action, out = ev.get("Test"), ev.get("Action"), ev.get("Output", "")
        if action in ("output", "build-output"):
            if not out.startswith(("=== RUN", "=== PAUSE", "=== CONT")):
                sys.stdout.write(out)
                sys.stdout.flush()
            if test:
                kept = lines.setdefault(test, [])
                kept.append(out)
                del kept[:-KEEP]
        elif action == "fail" and test:
            failed.append(test)
    if failed:
        print("\n=== what failed, each test's own lines again (its last %d):" % KEEP)
        for test in failed:
            print("--- %s" % test)
            for out in lines.get(test, []):
                if not out.startswith(("=== RUN", "=== PAUSE", "=== CONT", "=== NAME")):
                    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
