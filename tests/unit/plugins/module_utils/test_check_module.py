"""The check modules' shared start: number options held to bounds from a table, each refusal naming the option;
and commands under a deadline."""

import os
import signal
import time

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import check_module
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import (
    AT_LEAST_1,
    NOT_NEGATIVE,
    POSITIVE,
    SHARE,
    between,
    out_of_bounds,
)

BOUNDS = {"steps": AT_LEAST_1, "threads": NOT_NEGATIVE, "min_gbps": POSITIVE, "ratio": SHARE, "dscp": between(0, 63)}
GOOD = {"steps": 1, "threads": 0, "min_gbps": 0.5, "ratio": 1, "dscp": 63}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"steps": 0}, "steps must be at least 1, got 0"),
        ({"threads": -1}, "threads must be 0 or more, got -1"),
        ({"min_gbps": 0.0}, "min_gbps must be greater than 0, got 0.0"),
        ({"ratio": 0}, "ratio must be in (0, 1], got 0"),
        ({"ratio": 1.01}, "ratio must be in (0, 1], got 1.01"),
        ({"dscp": 64}, "dscp must be 0-63, got 64"),
        ({"dscp": -1}, "dscp must be 0-63, got -1"),
    ],
)
def test_an_option_out_of_its_bound_is_named(change, message):
    assert out_of_bounds({**GOOD, **change}, BOUNDS) == message


def test_options_within_their_bounds_or_unset_pass():
    assert out_of_bounds(GOOD, BOUNDS) is None
    assert out_of_bounds({**GOOD, "min_gbps": None}, BOUNDS) is None


def test_the_first_option_out_of_bounds_is_the_one_named():
    assert out_of_bounds({**GOOD, "steps": 0, "dscp": 99}, BOUNDS) == "steps must be at least 1, got 0"


def test_a_command_that_answers_gives_its_status_and_output_in_the_c_locale():
    rc, out, err = check_module.run_with_deadline(["sh", "-c", 'echo "$LC_ALL"; echo oops >&2; exit 3'], 10)
    assert (rc, out, err) == (3, "C\n", "oops\n")


def test_a_command_that_does_not_answer_is_killed_at_its_deadline():
    started = time.monotonic()
    rc, out, err = check_module.run_with_deadline(["sh", "-c", "sleep 30; echo late"], 1)
    assert (rc, out, err) == (check_module.HUNG_RC, "", "sh did not answer in 1 s")
    assert time.monotonic() - started < 3


def test_a_command_whose_pipe_outlives_the_kill_is_left_behind_after_the_grace(tmp_path):
    """As a process stuck in the driver is: here a child in a session of its own keeps the output pipe open."""
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    rc, _out, err = check_module.run_with_deadline(
        ["sh", "-c", f"setsid sleep 30 & echo $! > {pid_file}; sleep 30"], 1, grace=1
    )
    elapsed = time.monotonic() - started
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert rc == check_module.HUNG_RC and "did not answer in 1 s" in err
    assert elapsed < 4, elapsed


def test_a_command_that_cannot_start_says_why():
    rc, _out, err = check_module.run_with_deadline(["/nonexistent/nvidia-smi"], 1)
    assert rc == 127 and "No such file" in err
