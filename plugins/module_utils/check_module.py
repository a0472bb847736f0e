"""The start every check module shares: an AnsibleModule with check mode, the `fail_on` option and the C
locale for every command it runs, and its input refused in one message, naming the setting, before anything
runs. Number options are held to bounds from a table; what a table cannot say is the module's `input_problem`."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import fail_on_option

# Every command a check module runs speaks English numbers and words: parsers depend on it.
C_LOCALE = {"LC_ALL": "C", "LANG": "C"}


@dataclass(frozen=True)
class Bound:
    """What a number option must be, and how a refusal says so."""

    holds: Callable[[Any], bool]
    words: str


AT_LEAST_1 = Bound(lambda value: value >= 1, "at least 1")
POSITIVE = Bound(lambda value: value > 0, "greater than 0")
NOT_NEGATIVE = Bound(lambda value: value >= 0, "0 or more")
SHARE = Bound(lambda value: 0 < value <= 1, "in (0, 1]")


def between(low: int, high: int) -> Bound:
    """A whole range, both ends allowed: a priority, a DSCP, a port."""
    return Bound(lambda value: low <= value <= high, f"{low}-{high}")


def out_of_bounds(params: Mapping[str, Any], bounds: Mapping[str, Bound]) -> str | None:
    """The first option outside its bound, as a message naming it; None when all hold (an unset option holds)."""
    for name, bound in bounds.items():
        value = params[name]
        if value is not None and not bound.holds(value):
            return f"{name} must be {bound.words}, got {value}"
    return None


def start(
    argument_spec: dict[str, Any],
    input_problem: Callable[[dict[str, Any]], str | None],
    bounds: Mapping[str, Bound] | None = None,
    **kwargs: Any,
) -> AnsibleModule:
    """The module of argument_spec (plus fail_on); it fails at once where an option is out of its bound or
    input_problem(params) names a problem."""
    module = AnsibleModule(
        argument_spec={**argument_spec, "fail_on": fail_on_option()}, supports_check_mode=True, **kwargs
    )
    module.run_command_environ_update = dict(C_LOCALE)
    problem = out_of_bounds(module.params, bounds or {}) or input_problem(module.params)
    if problem:
        module.fail_json(msg=problem)
    return module


# The exit status of a command that did not answer in time: timeout(1)'s, so callers read either the same way.
HUNG_RC = 124


def run_with_deadline(argv: list[str], seconds: float, grace: float = 5) -> tuple[int, str, str]:
    """(rc, stdout, stderr) of argv; (HUNG_RC, "", why) when it has not ended within `seconds`.

    A process stuck in a driver call (a wedged GPU) outlives even SIGKILL until the call returns, and
    timeout(1) or subprocess.run would wait for it, and so would reading a pipe a child of it holds: its
    process group is killed and, if the pipes are still open `grace` seconds later, it is left behind.
    """
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv comes from the module, never a shell
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **C_LOCALE},
            text=True,
            start_new_session=True,  # its own process group, killed as one
        )
    except OSError as exc:
        return 127, "", str(exc)
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=grace)
        return HUNG_RC, "", f"{argv[0]} did not answer in {seconds:g} s"
    return proc.returncode, out, err
