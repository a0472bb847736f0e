from ansible_collections.gpulab.cluster.plugins.filter.monitoring import collector_files

GPU = {
    "name": "gpu",
    "title": "GPU",
    "interval": 15,
    "python": "/opt/m/bin/python3",
    "code": ["checks.py", "prom_text.py"],
}
SLURM = {
    "name": "slurm",
    "title": "Slurm",
    "interval": 30,
    "python": "/usr/bin/python3",
    "code": ["prom_text.py", "slurm.py"],
}


def test_each_collector_has_its_script_and_units_and_shared_code_is_written_once():
    files = collector_files([GPU, SLURM], "/opt/m/lib/gpulab", "/opt/m/lib/gpulab/mu", "/ctl/module_utils")
    assert [f["path"] for f in files] == [
        "/opt/m/lib/gpulab/mu/checks.py",
        "/opt/m/lib/gpulab/mu/prom_text.py",
        "/opt/m/lib/gpulab/mu/slurm.py",
        "/opt/m/lib/gpulab/gpulab_gpu_metrics.py",
        "/etc/systemd/system/gpulab-gpu-metrics.service",
        "/etc/systemd/system/gpulab-gpu-metrics.timer",
        "/opt/m/lib/gpulab/gpulab_slurm_metrics.py",
        "/etc/systemd/system/gpulab-slurm-metrics.service",
        "/etc/systemd/system/gpulab-slurm-metrics.timer",
    ]
    assert files[1] == {
        "path": "/opt/m/lib/gpulab/mu/prom_text.py",
        "src": "/ctl/module_utils/prom_text.py",
        "owner": "root",
        "group": "root",
        "mode": "0644",
    }
    assert files[3]["template"] == "gpulab_gpu_metrics.py.j2" and "vars" not in files[3]
    assert files[8]["template"] == "gpulab-metrics.timer.j2" and files[8]["vars"] == {"collector": SLURM}
    assert collector_files([], "/l", "/c", "/s") == []
