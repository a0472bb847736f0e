from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.modules import gpu_power_limit

RTX4090 = (Path(__file__).resolve().parents[2] / "fixtures" / "nvidia_smi" / "query_power_rtx4090_550.csv").read_text()


def nvidia_smi(calls, query=RTX4090, rc=0):
    def run(module, cmd, **kw):
        calls.append(cmd[1:])
        if cmd[1].startswith("--query-gpu="):
            return rc, query if rc == 0 else "", "" if rc == 0 else "NVIDIA-SMI has failed"
        return 0, "Power limit for GPU 00000000:01:00.0 was set to 300.00 W from 450.00 W.\nAll done.\n", ""

    return run


def with_smi(monkeypatch, path="/usr/bin/nvidia-smi"):
    monkeypatch.setattr(gpu_power_limit.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: path)


def test_sets_each_gpu_that_differs(run_module, monkeypatch):
    with_smi(monkeypatch)
    calls = []
    result, failed = run_module(gpu_power_limit.main, {"limits": {"all": 300, "1": 450}}, run_command=nvidia_smi(calls))
    assert not failed and result["changed"]
    assert calls[0] == ["--query-gpu=index,uuid,power.limit,power.min_limit,power.max_limit,power.default_limit",
                        "--format=csv,noheader,nounits"]  # fmt: skip
    # By UUID: the index may name another GPU after the next boot.
    assert calls[1:] == [["-i", "GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60", "-pl", "300"]]
    assert result["diff"] == {"before": "GPU 0: 450.0 W\n", "after": "GPU 0: 300 W\n"}
    assert result["limits"] == [
        {"index": 0, "uuid": "GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60", "watts": 300.0},
        {"index": 1, "uuid": "GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d", "watts": 450.0},
    ]


def test_check_mode_sets_nothing(run_module, monkeypatch):
    with_smi(monkeypatch)
    calls = []
    result, failed = run_module(
        gpu_power_limit.main, {"limits": {"all": 300}}, run_command=nvidia_smi(calls), check_mode=True
    )
    assert not failed and result["changed"] and len(result["changes"]) == 2
    assert all(call[0] != "-i" for call in calls)


def test_one_bad_entry_sets_nothing(run_module, monkeypatch):
    with_smi(monkeypatch)
    calls = []
    result, failed = run_module(gpu_power_limit.main, {"limits": {"0": 300, "1": 700}}, run_command=nvidia_smi(calls))
    assert failed
    assert result["msg"] == "nvidia_driver_power_limits[1]: 700 W is outside what GPU 1 allows (150 to 600 W)"
    assert all(call[0] != "-i" for call in calls)


def test_no_driver_or_unreadable_gpus_fail_saying_so(run_module, monkeypatch):
    with_smi(monkeypatch, None)
    result, failed = run_module(gpu_power_limit.main, {"limits": {"all": 300}, "variable": "my_limits"})
    assert failed and result["msg"].startswith("my_limits is set, but this node has no nvidia-smi")
    with_smi(monkeypatch)
    result, failed = run_module(gpu_power_limit.main, {"limits": {"all": 300}}, run_command=nvidia_smi([], rc=9))
    assert (
        failed
        and result["msg"] == "nvidia_driver_power_limits: could not read the GPUs' power limits: NVIDIA-SMI has failed"
    )
