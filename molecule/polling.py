"""Waiting on a condition, shared by the scenarios' tests (importable: molecule/ is on sys.path with its conftest)."""

import time


def wait_for(condition, seconds, step=2):
    """condition()'s first true value within `seconds`, asked every `step` seconds; else its last (false) value."""
    deadline = time.monotonic() + seconds
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(step)
    return value
