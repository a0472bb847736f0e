#!/usr/bin/env python3
"""Where an ansible-playbook run spent its time, per role: tasks started and seconds, from the log the
profile_tasks callback writes (ansible.cfg turns it on).

    scripts/run-profile.py LOG [N]    the per-role table, then the N slowest tasks (default 0)

Each task's (and each handler's) header line is followed by profile_tasks' timestamp line, whose
"(H:MM:SS.fff)" is the time the one before it took; the last one's time is on the recap's timestamp line.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(.*?)\] \*+")
STAMP = re.compile(r"\((\d+):(\d+):(\d+\.\d+)\)\s+\d+:\d+:\d+\.\d+ \*+\s*$")


def profile(lines: list[str]) -> list[tuple[str, float]]:
    """(task name, seconds) for each task in the order they started."""
    tasks, durations = [], []
    for line in lines:
        if match := TASK.match(line):
            tasks.append(match.group(1))
        elif match := STAMP.search(line):
            hours, minutes, seconds = match.groups()
            durations.append(int(hours) * 3600 + int(minutes) * 60 + float(seconds))
    # durations[0] is the time before the first task; durations[k + 1] is task k's.
    return [(task, durations[k + 1] if k + 1 < len(durations) else 0.0) for k, task in enumerate(tasks)]


def per_role(tasks: list[tuple[str, float]]) -> list[tuple[str, int, float]]:
    """(role, tasks, seconds), the slowest role first; tasks outside a role count as '(plays)'."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for name, seconds in tasks:
        role = name.split(" : ", 1)[0] if " : " in name else "(plays)"
        totals[role][0] += 1
        totals[role][1] += seconds
    return sorted(((role, int(n), s) for role, (n, s) in totals.items()), key=lambda row: -row[2])


def main() -> None:
    with open(sys.argv[1], encoding="utf-8", errors="replace") as handle:
        tasks = profile(handle.read().splitlines())
    rows = per_role(tasks)
    print(f"{'seconds':>8} {'tasks':>6}  role")
    for role, count, seconds in rows:
        print(f"{seconds:8.1f} {count:6d}  {role}")
    print(f"{sum(r[2] for r in rows):8.1f} {sum(r[1] for r in rows):6d}  total")
    slowest = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    for name, seconds in sorted(tasks, key=lambda task: -task[1])[:slowest]:
        print(f"{seconds:8.2f}  {name}")


if __name__ == "__main__":
    main()
