from ansible_collections.gpulab.cluster.plugins.modules import slurm_drain

LINES = {
    "gpu1": "NodeName=gpu1 State=IDLE Partitions=gpu",
    "gpu2": "NodeName=gpu2 State=IDLE+DRAIN Reason=gpulab: validate: ecc: 3 [root@2026-11-30T12:00:00]",
    "gpu3": "NodeName=gpu3 State=IDLE+DRAIN Reason=maintenance [root@2026-11-30T12:00:00]",
}


def scontrol(calls):
    def run(module, cmd, **kw):
        calls.append(cmd[1:])
        if cmd[1:3] == ["-o", "show"]:
            return 0, LINES[cmd[4]] + "\n", ""
        return 0, "", ""

    return run


def test_drains_resumes_and_leaves_the_admins_node(run_module, monkeypatch):
    monkeypatch.setattr(slurm_drain.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/scontrol")
    calls = []
    args = {"nodes": ["gpu1", "gpu2", "gpu3"], "problems": {"gpu1": "gpu_count:  1 of 2\n", "gpu3": "pcie: x8"}}
    result, failed = run_module(slurm_drain.main, args, run_command=scontrol(calls))
    assert not failed and result["changed"]
    assert [c for c in calls if c[0] == "update"] == [
        ["update", "NodeName=gpu1", "State=DRAIN", "Reason=gpulab: validate: gpu_count: 1 of 2"],
        ["update", "NodeName=gpu2", "State=RESUME"],
    ]
    assert (result["drained"], result["resumed"], result["left_alone"]) == (["gpu1"], ["gpu2"], {"gpu3": "maintenance"})


def test_check_mode_and_no_slurm(run_module, monkeypatch):
    monkeypatch.setattr(slurm_drain.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/scontrol")
    calls = []
    result, _failed = run_module(slurm_drain.main, {"nodes": ["gpu2"]}, run_command=scontrol(calls), check_mode=True)
    assert result["resumed"] == ["gpu2"] and all(c[0] != "update" for c in calls)
    monkeypatch.setattr(slurm_drain.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    result, failed = run_module(slurm_drain.main, {"nodes": ["gpu2"]})
    assert not failed and not result["changed"] and result["msg"] == "scontrol not found: no Slurm here"


def test_a_prefix_that_could_resume_other_drains_is_refused(run_module):
    result, failed = run_module(slurm_drain.main, {"nodes": ["gpu1"], "prefix": ""})
    assert failed and result["msg"].startswith("prefix must start with 'gpulab:'")
