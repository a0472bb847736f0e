#!/usr/bin/env python3
"""Show where a long ansible-playbook run is while keeping its whole output in a log.

    ansible-playbook site.yml 2>&1 | scripts/progress.py LOG [LABEL]

Every line goes to LOG; stderr gets one line when a play starts and when a role first runs in it, with the
time since the start, so a first converge that takes minutes does not look hung.
"""

from __future__ import annotations

import re
import sys
import time

PLAY = re.compile(r"^PLAY \[(.*)\] \**$")
TASK = re.compile(r"^TASK \[(?:(?P<role>[^:\]]+) : )?(?P<task>.*)\] \**$")
RECAP = re.compile(r"^PLAY RECAP \**$")


class Progress:
    """Feed it the run's lines one by one; it answers what to show, or None."""

    def __init__(self) -> None:
        self.roles: set[str] = set()  # shown in this play (a role that imports common comes back to it)

    def feed(self, line: str) -> str | None:
        line = line.rstrip("\n")
        if match := PLAY.match(line):
            self.roles = set()
            return f"play: {match.group(1)}"
        if (match := TASK.match(line)) and match.group("role") and match.group("role") not in self.roles:
            self.roles.add(match.group("role"))
            return f"  role {match.group('role')}"
        if RECAP.match(line):
            return "recap"
        return None


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    label = f"{sys.argv[2]} " if len(sys.argv) == 3 else ""
    start = time.monotonic()
    progress = Progress()
    with open(sys.argv[1], "w", encoding="utf-8") as log:
        for line in sys.stdin:
            log.write(line)
            log.flush()
            if text := progress.feed(line):
                minutes, seconds = divmod(int(time.monotonic() - start), 60)
                print(f"{label}[{minutes:02d}:{seconds:02d}] {text}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
