import threading

from ansible_collections.gpulab.cluster.plugins.modules import slurm_accounting

SHOW = {
    "cluster": "gpulab\n",
    "association": "root||1|normal\nroot|root|1|normal\n",
    "qos": "normal|0||cluster|00:00:00||\n",
}


def fake_sacctmgr(calls):
    def run(module, cmd, **kw):
        calls.append(cmd[1:])
        if cmd[1:4] == ["-n", "-P", "show"]:
            return 0, SHOW[cmd[4]], ""
        return 0, " Adding Account(s)\n", ""

    return run


def test_adds_account_and_user(run_module, monkeypatch):
    monkeypatch.setattr(slurm_accounting.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/sacctmgr")
    calls = []
    args = {"cluster": "gpulab", "accounts": [{"name": "vision", "users": ["alice"]}]}
    result, failed = run_module(slurm_accounting.main, args, run_command=fake_sacctmgr(calls))
    assert not failed and result["changed"]
    assert calls[3:] == [
        [
            "-i",
            "add",
            "account",
            "vision",
            "Cluster=gpulab",
            "Description=vision",
            "Fairshare=1",
            "Organization=vision",
        ],
        ["-i", "add", "user", "alice", "Account=vision", "Cluster=gpulab"],
    ]


def test_check_mode_runs_nothing(run_module, monkeypatch):
    monkeypatch.setattr(slurm_accounting.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/sacctmgr")
    calls = []
    args = {"cluster": "gpulab", "accounts": [{"name": "vision"}]}
    result, failed = run_module(slurm_accounting.main, args, run_command=fake_sacctmgr(calls), check_mode=True)
    assert not failed and result["changed"] and len(calls) == 3
    assert result["commands"][0][:3] == ["add", "account", "vision"]


def test_database_down_is_a_clear_error(run_module, monkeypatch):
    monkeypatch.setattr(slurm_accounting.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/sacctmgr")
    result, failed = run_module(
        slurm_accounting.main,
        {"cluster": "gpulab"},
        run_command=lambda *a, **k: (1, "", "sacctmgr: error: Sending PersistInit msg: Connection refused"),
    )
    assert failed
    assert result["msg"] == (
        "sacctmgr show cluster failed (is slurmdbd running?): "
        "sacctmgr: error: Sending PersistInit msg: Connection refused"
    )


def test_the_three_reads_wait_on_slurmdbd_at_once(run_module, monkeypatch):
    # Each read waits at a barrier for the other two: read one after another, the first would time out.
    monkeypatch.setattr(slurm_accounting.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/sacctmgr")
    barrier = threading.Barrier(3, timeout=5)
    calls = []
    answer = fake_sacctmgr(calls)

    def run(module, cmd, **kw):
        if cmd[1:4] == ["-n", "-P", "show"]:
            barrier.wait()
        return answer(module, cmd, **kw)

    result, failed = run_module(slurm_accounting.main, {"cluster": "gpulab"}, run_command=run)
    assert (
        not failed and not result["changed"] and sorted(call[3] for call in calls) == ["association", "cluster", "qos"]
    )
