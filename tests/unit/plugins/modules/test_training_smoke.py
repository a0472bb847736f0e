import re
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.modules import training_smoke

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "training"


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(training_smoke.time, "sleep", lambda seconds: None)


def installed(tmp_path):
    submit, script = tmp_path / "gpulab-sbatch", tmp_path / "train_digits.py"
    submit.write_text("")
    script.write_text("")
    return {"submit": str(submit), "script": str(script), "output_dir": str(tmp_path / "out"), "fail_on": "never"}


# `scontrol -o show job` lines of Slurm 22.05 (the lab), shortened in the middle.
RUNNING = "JobId={} JobName=gpulab-smoke UserId=root(0) JobState=RUNNING Reason=None Dependency=(null) ExitCode=0:0"
ENDED = "JobId={} JobName=gpulab-smoke UserId=root(0) JobState={} Reason=NonZeroExitCode Dependency=(null) ExitCode={}"


def slurm(tmp_path, states, outputs, ending=("COMPLETED", "0:0")):
    """run_command answering scontrol's nodes from states, each job with the next recorded output (written
    where --output says, as sbatch would) and ending as `ending` the second time it is asked about,
    recording the commands."""
    seen, jobs = [], iter(outputs)

    def run(module, cmd, environ_update=None, **kw):
        seen.append(cmd)
        if cmd[:3] == ["scontrol", "-o", "show"] and cmd[3] == "job":
            asked = sum(1 for c in seen if c == cmd)
            return 0, (RUNNING.format(cmd[-1]) if asked == 1 else ENDED.format(cmd[-1], *ending)) + "\n", ""
        if cmd[0] == "scontrol":
            state, reason = states[cmd[-1]]
            return 0, f"NodeName={cmd[-1]} State={state} Reason={reason}\n", ""
        job = 100 + len(seen)
        output = next(a for a in cmd if a.startswith("--output=")).split("=", 1)[1].replace("%j", str(job))
        Path(output).write_text((FIXTURES / f"smoke-{next(jobs)}.out").read_text())
        return 0, f"Submitted batch job {job}\n", ""

    return run, seen


def test_one_and_all_nodes_run_and_pass(run_module, tmp_path):
    run, seen = slurm(tmp_path, {"gpu1": ("IDLE", "none"), "gpu2": ("IDLE", "none")}, ["missed", "pass"])
    result, failed = run_module(training_smoke.main, dict(installed(tmp_path), hosts=["gpu1", "gpu2"]), run)
    assert not failed
    jobs = [c for c in seen if c[0].endswith("gpulab-sbatch")]
    assert all("--wait" not in c for c in jobs)  # followed with scontrol instead
    assert [c[:4] for c in seen].count(["scontrol", "-o", "show", "job"]) == 4  # running, then ended: each job
    assert [re.search(r"--nodelist=(\S+)", " ".join(c)).group(1) for c in jobs] == ["gpu1", "gpu1,gpu2"]
    assert [(c["check"], c["status"]) for c in result["checks"]] == [
        ("training_smoke.1_node", "fail"),  # the recorded 2-epoch run, short of the target
        ("training_smoke.2_nodes", "pass"),
    ]
    assert sorted(result["runs"]) == ["1", "2"] and result["runs"]["2"]["epochs_to_target"] == 4
    assert list((tmp_path / "out").iterdir()) == []  # both printed their figures: nothing left to read


def test_a_drained_node_is_left_out_and_named(run_module, tmp_path):
    states = {"gpu1": ("IDLE", "none"), "gpu2": ("DRAIN", "gpulab: validate: gpu_count")}
    run, _seen = slurm(tmp_path, states, ["pass"])
    result, failed = run_module(
        training_smoke.main, dict(installed(tmp_path), hosts=["gpu1", "gpu2"], node_counts=[2]), run
    )
    assert not failed
    assert [(c["check"], c["status"]) for c in result["checks"]] == [
        ("training_smoke.nodes", "unavailable"),
        ("training_smoke.2_nodes", "unavailable"),
    ]
    assert result["checks"][1]["message"] == "2 nodes asked for, Slurm can use 1 now"


def test_a_failed_job_fails_with_its_cause_and_keeps_its_output(run_module, tmp_path):
    run, _seen = slurm(tmp_path, {"gpu1": ("IDLE", "none")}, ["failed"], ending=("FAILED", "1:0"))
    result, failed = run_module(training_smoke.main, dict(installed(tmp_path), hosts=["gpu1"]), run)
    assert not failed
    [check] = result["checks"]
    assert check["status"] == "fail" and check["code"] == "SMOKE_FAILED"
    assert check["message"].startswith("job 102 ended FAILED (exit code 1:0): FileNotFoundError: [Errno 2] No such")
    assert check["message"].endswith(f"(its output: {tmp_path}/out/gpulab-smoke-1n-102.out)")  # job 102: after scontrol


def test_a_job_past_its_timeout_fails_and_is_cancelled(run_module, tmp_path, monkeypatch):
    seen, clock = [], iter(range(0, 1000, 30))  # every look at the clock 30 s later
    monkeypatch.setattr(training_smoke.time, "monotonic", lambda: next(clock))

    def run(module, cmd, environ_update=None, **kw):
        seen.append(cmd)
        if cmd[:4] == ["scontrol", "-o", "show", "job"]:
            return 0, RUNNING.format(cmd[-1]) + "\n", ""  # queued or hung: it never ends
        if cmd[0] == "scontrol":
            return 0, f"NodeName={cmd[-1]} State=IDLE Reason=none\n", ""
        return 0, "Submitted batch job 7\n" if cmd[0].endswith("gpulab-sbatch") else "", ""

    result, failed = run_module(training_smoke.main, dict(installed(tmp_path), hosts=["gpu1"], timeout=61), run)
    assert not failed
    [check] = result["checks"]
    assert check["status"] == "fail" and check["code"] == "SMOKE_TIMEOUT"
    assert check["message"] == "job 7 did not finish in 61 s (queued behind other jobs, or hung); it was cancelled"
    submit = next(c for c in seen if c[0].endswith("gpulab-sbatch"))
    assert "--time=2" in submit  # Slurm ends the job itself too: 61 s rounded up to whole minutes
    assert seen.count(["scontrol", "-o", "show", "job", "7"]) == 2  # at 30 s and 60 s; at 90 s it is past 61
    assert seen[-1] == ["scancel", "7"]


def test_without_the_training_role_it_fails(run_module, tmp_path):
    args = {"hosts": ["gpu1"], "output_dir": str(tmp_path), "submit": str(tmp_path / "none"), "fail_on": "never"}
    result, failed = run_module(training_smoke.main, args, lambda *a, **k: (0, "", ""))
    assert not failed and result["status"] == "fail" and result["checks"][0]["code"] == "TRAINING_MISSING"
    assert "apply the training role (--tags training)" in result["checks"][0]["message"]


def test_check_mode_submits_nothing(run_module, tmp_path):
    result, failed = run_module(
        training_smoke.main, dict(installed(tmp_path), hosts=["gpu1"]), lambda *a, **k: 1 / 0, check_mode=True
    )
    assert not failed and result["status"] == "unavailable"
    assert [(c["check"], c["message"]) for c in result["checks"]] == [
        ("training_smoke.run", "check mode: no job submitted")
    ]


def test_bad_input_is_refused(run_module, tmp_path):
    base = installed(tmp_path)
    for args, msg in [
        ({"hosts": []}, "hosts is empty: name the Slurm nodes to run on"),
        ({"hosts": ["gpu1"], "target_accuracy": 1.5}, "target_accuracy must be in (0, 1], got 1.5"),
        ({"hosts": ["gpu1"], "max_epochs": 0}, "max_epochs must be at least 1, got 0"),
        ({"hosts": ["gpu1"], "node_counts": [0, 2]}, "node_counts must be 1 or more each, got [0, 2]"),
    ]:
        result, failed = run_module(training_smoke.main, dict(base, **args))
        assert failed and result["msg"] == msg
