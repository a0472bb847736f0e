from pathlib import Path
from unittest import mock

from ansible.module_utils import basic

from ansible_collections.gpulab.cluster.plugins.modules import ceph_health, slurm_health, slurm_scheduler

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GPU1 = (FIXTURES / "slurm" / "scontrol-show-node.txt").read_text().splitlines()[0]


def answers(table):
    """A run_command answering each command (its first words after any `timeout N`) from table, recording stdin."""
    seen = []

    def run(module, cmd, data=None, **kw):
        words = cmd[2:] if cmd[0] == "timeout" else cmd
        seen.append((words, data))
        return next(answer for prefix, answer in table.items() if tuple(words[: len(prefix)]) == prefix)

    return run, seen


def test_slurm_health_asks_systemd_slurmctld_and_unmunge(run_module):
    run, seen = answers(
        {
            ("systemctl",): (0, "active\n", ""),
            ("scontrol",): (0, GPU1 + "\n", ""),
            ("unmunge",): (0, "STATUS: Success (0)\n", ""),
        }
    )
    with mock.patch.object(basic.AnsibleModule, "get_bin_path", return_value="/usr/bin/scontrol"):
        result, failed = run_module(slurm_health.main, {"node": "gpu1", "credential": "MUNGE:AbC:"}, run_command=run)
    assert not failed and result["status"] == "pass"
    assert [c["check"] for c in result["checks"]] == ["slurm.slurmd", "slurm.munge", "slurm.node"]
    assert (["unmunge"], "MUNGE:AbC:") in seen  # the credential goes in on stdin
    assert ["scontrol", "-o", "show", "node", "gpu1"] in [words for words, _stdin in seen]


def test_slurm_health_without_slurm_is_unavailable(run_module):
    with mock.patch.object(basic.AnsibleModule, "get_bin_path", return_value=None):
        result, failed = run_module(slurm_health.main, {"node": "gpu1"}, run_command=lambda *a, **k: (0, "", ""))
    assert not failed and result["status"] == "unavailable"


def test_ceph_health_reads_health_and_osds_and_fails_when_the_monitors_do_not_answer(run_module):
    run, _seen = answers(
        {
            ("ceph", "health"): (0, (FIXTURES / "ceph" / "health-ok.json").read_text(), ""),
            ("ceph", "osd"): (0, (FIXTURES / "ceph" / "osd-stat-up.json").read_text(), ""),
        }
    )
    with mock.patch.object(basic.AnsibleModule, "get_bin_path", return_value="/usr/bin/ceph"):
        result, failed = run_module(ceph_health.main, {"expected_osds": 2}, run_command=run)
        assert not failed and [c["status"] for c in result["checks"]] == ["pass", "pass"]
        hung, _seen = answers({("ceph",): (124, "", "")})
        result, failed = run_module(ceph_health.main, {"fail_on": "never", "timeout": 5}, run_command=hung)
    assert not failed and result["checks"][0]["code"] == "CEPH_UNREACHABLE"
    assert result["checks"][0]["message"].startswith("ceph health detail did not answer in 5 s")


CONFIG = (FIXTURES / "slurm" / "scontrol-show-config-preempt.txt").read_text()
QOS = "normal|100|scavenger|cluster|00:00:00||\nscavenger|0||requeue|00:02:00||\n"


def test_slurm_scheduler_reads_the_config_and_the_qos_under_a_deadline(run_module):
    run, seen = answers({("scontrol",): (0, CONFIG, ""), ("sacctmgr",): (0, QOS, "")})
    with mock.patch.object(basic.AnsibleModule, "get_bin_path", return_value="/usr/bin/scontrol"):
        result, failed = run_module(slurm_scheduler.main, {"preemption": True, "tiers": ["scavenger"]}, run_command=run)
    assert not failed and result["status"] == "pass" and not result["changed"]
    assert [call[0][:3] for call in seen] == [["scontrol", "show", "config"], ["sacctmgr", "-n", "-P"]]
    assert [c["check"] for c in result["checks"]] == ["slurm.preemption", "slurm.qos"]


def test_slurm_scheduler_names_slurmdbd_when_accounting_does_not_answer(run_module):
    run = answers(
        {("scontrol",): (0, CONFIG, ""), ("sacctmgr",): (1, "", "sacctmgr: error: Problem talking to the database")}
    )[0]
    with mock.patch.object(basic.AnsibleModule, "get_bin_path", return_value="/usr/bin/scontrol"):
        result, failed = run_module(slurm_scheduler.main, {"preemption": True}, run_command=run)
    assert failed and result["checks"][0]["code"] == "SLURM_DBD_UNREACHABLE"
    assert "Problem talking to the database" in result["checks"][0]["message"]


def test_slurm_scheduler_reports_a_gpu_a_job_holds_idle_when_given_prometheus_s_answer(run_module):
    jobs = (
        (FIXTURES / "slurm" / "scontrol-d-show-job-gpus.txt").read_text().replace("RunTime=00:00:0", "RunTime=01:00:0")
    )
    idle = [{"metric": {"instance": "slurm-gpu2", "gpu": "1"}, "value": [1.7e9, "0"]}]
    run, seen = answers({("scontrol", "show"): (0, CONFIG, ""), ("scontrol", "-d"): (0, jobs, "")})
    with mock.patch.object(basic.AnsibleModule, "get_bin_path", return_value="/usr/bin/scontrol"):
        result, failed = run_module(
            slurm_scheduler.main, {"gpu_utilization": idle, "fail_on": "never"}, run_command=run
        )
        assert not failed and seen[-1][0] == ["scontrol", "-d", "-o", "show", "job"]
        (record,) = [c for c in result["checks"] if c["check"] == "slurm.idle_gpus"]
        assert (record["status"], record["code"]) == ("warn", "GPU_IDLE_IN_JOB")
        assert record["message"] == (
            "1 GPU(s) held by running jobs did nothing in the last 30 min: job 8 nlp (root) on slurm-gpu2 GPU 1"
        )
        result, failed = run_module(slurm_scheduler.main, {"gpu_utilization": {"oops": 1}}, run_command=run)
        (record,) = [c for c in result["checks"] if c["check"] == "slurm.idle_gpus"]
        assert record["status"] == "unavailable" and "not Prometheus's answer" in record["message"]
        result, failed = run_module(slurm_scheduler.main, {}, run_command=run)
        assert [c["check"] for c in result["checks"]] == ["slurm.preemption"]  # not asked: no record
        result, failed = run_module(slurm_scheduler.main, {"idle_gpu_minutes": 0}, run_command=run)
        assert failed and result["msg"] == "idle_gpu_minutes must be at least 1, got 0"
