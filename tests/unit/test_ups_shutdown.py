"""gpulab-ups-shutdown (the ups role's tiered shutdown): it waits until the nodes before it stop
answering, no longer than its bound, and then always runs the command it was given."""

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "roles/ups/files/gpulab-ups-shutdown"


def load():
    loader = importlib.machinery.SourceFileLoader("gpulab_ups_shutdown", str(SCRIPT))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


shutdown = load()


class Clock:
    """A clock that moves only when the script sleeps; it records each probe with the time it was made."""

    def __init__(self, answering_until):
        self.now = 0.0
        self.answering_until = answering_until  # address -> the time it stops answering
        self.probes = []

    def probe(self, address):
        self.probes.append((self.now, address))
        return self.now < self.answering_until[address]

    def sleep(self, seconds):
        self.now += seconds


def wait(nodes, seconds, answering_until):
    clock = Clock(answering_until)
    left = shutdown.still_up(nodes, seconds, probe=clock.probe, clock=lambda: clock.now, sleep=clock.sleep)
    return left, clock


def test_it_goes_on_as_soon_as_every_node_has_stopped_answering():
    nodes = {"gpu1": "10.0.0.11", "gpu2": "10.0.0.12"}
    left, clock = wait(nodes, 60, {"10.0.0.11": 3, "10.0.0.12": 7})
    assert left == []
    assert clock.now == 7
    # A node that has gone is not asked again.
    assert [t for t, address in clock.probes if address == "10.0.0.11"] == [0, 1, 2, 3]


def test_a_node_that_still_answers_is_named_and_the_bound_holds():
    nodes = {"gpu1": "10.0.0.11", "gpu2": "10.0.0.12"}
    left, clock = wait(nodes, 20, {"10.0.0.11": 3, "10.0.0.12": 1000})
    assert left == ["gpu2"]
    assert clock.now == 20


def test_nodes_already_gone_cost_no_wait():
    left, clock = wait({"gpu1": "10.0.0.11"}, 60, {"10.0.0.11": 0})
    assert (left, clock.now) == ([], 0)


def test_the_command_line_as_upsmon_runs_it():
    argv = ["60", "gpu1=10.0.0.11,gpu2=fd00::12", "--", "/sbin/shutdown", "-h", "+0"]
    assert shutdown.parse(argv) == (60, {"gpu1": "10.0.0.11", "gpu2": "fd00::12"}, ["/sbin/shutdown", "-h", "+0"])
    with pytest.raises(ValueError):
        shutdown.parse(["60", "gpu1=10.0.0.11", "/sbin/shutdown"])


def test_a_malformed_command_line_still_runs_the_command():
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "sixty", "gpu1=10.0.0.11", "--", "/bin/echo", "shut", "down"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (run.returncode, run.stdout) == (0, "shut down\n")


def test_it_waits_then_runs_the_command_with_nothing_answering():
    # 192.0.2.0/24 (TEST-NET-1) answers nobody: the script gives up at its bound and runs the command.
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "2", "gone=192.0.2.1", "--", "/bin/echo", "done"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (run.returncode, run.stdout) == (0, "done\n")
