#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints it as `go test -v` would, less
the === RUN/PAUSE/CONT lines; at the end, each failed test's own lines
again, so that a failure's messages stand at the end of CI's output, where
a reader of its tail finds them: the integration tests run about 30
minutes and print thousands of lines, and a subtest's messages, streamed
when it failed, were too far up for CI's excerpt to hold them.

A test that started and never ended (the -timeout's panic ends the
binary) counts as failed, and a failed package's own lines (the panic and
its goroutines) are repeated too. test2json splits a long line into
events of 1 KiB: they are joined back into lines before they are kept, and
each test keeps its first HEAD lines and its last TAIL, each cut at
LINE_MAX characters. Exits 0: the caller takes go test's status
(pipefail)."""

import json
import sys

HEAD, TAIL = 20, 80  # lines of each failed test repeated at the end
LINE_MAX = 2000  # characters of a repeated line
SKIP = ("=== RUN", "=== PAUSE", "=== CONT")


class Kept:
    """A test's lines: the first HEAD, the last TAIL, and how many between."""

    def __init__(self):
        self.head, self.tail, self.dropped, self.partial = [], [], 0, ""

    def add(self, chunk):
        self.partial += chunk
        while "\n" in self.partial:
            line, self.partial = self.partial.split("\n", 1)
            self.line(line)
        if len(self.partial) > LINE_MAX:  # a line of megabytes: its start is enough
            self.partial = self.partial[:LINE_MAX]

    def line(self, line):
        if line.startswith(SKIP + ("=== NAME",)):
            return
        line = line[:LINE_MAX]
        if len(self.head) < HEAD:
            self.head.append(line)
            return
        self.tail.append(line)
        if len(self.tail) > TAIL:
            del self.tail[0]
            self.dropped += 1

    def lines(self):
        if self.partial:
            self.line(self.partial)
            self.partial = ""
        gap = ["    … %d lines …" % self.dropped] if self.dropped else []
        return self.head + gap + self.tail


def main():
    kept = {}  # (package, test) -> Kept; test "" is the package's own lines
    ended = set()
    started = []
    failed = []
    for raw in sys.stdin:
        try:
            ev = json.loads(raw)
        except ValueError:
            ev = None
        if not isinstance(ev, dict):
            sys.stdout.write(raw)  # a build error, not an event
            continue
        key = (ev.get("Package", ""), ev.get("Test") or "")
        action, out = ev.get("Action"), ev.get("Output") or ""
        if action in ("output", "build-output"):
            if not out.startswith(SKIP):
                sys.stdout.write(out)
                sys.stdout.flush()
            kept.setdefault(key, Kept()).add(out)
        elif action == "run":
            started.append(key)
        elif action in ("pass", "fail", "skip"):
            ended.add(key)
            if action == "fail":
                failed.append(key)
    # Started and never ended: the binary died under it (a timeout's panic).
    failed += [k for k in started if k not in ended]
    if failed:
        print("\n=== what failed, each test's own lines again (its first %d and last %d):" % (HEAD, TAIL))
        for key in failed:
            pkg, test = key
            print("--- %s" % (test or pkg + " (the package's own lines)"))
            if key in started and key not in ended:
                print("    (it started and never ended: the test binary died under it)")
            for line in kept.get(key, Kept()).lines():
                print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
