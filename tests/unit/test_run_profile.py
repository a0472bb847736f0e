"""scripts/run-profile.py on a profile_tasks log: each task's (and handler's) time is on the next timestamp line."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("run_profile", ROOT / "scripts" / "run-profile.py")
run_profile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_profile)

LOG = """\
PLAY [OS baseline on every node] ***********************************************

TASK [Gather facts where Python exists] ****************************************
Thursday 03 December 2026  12:56:12 +0000 (0:00:00.040)       0:00:00.040 *****
ok: [gpu1]

TASK [gpulab.cluster.common : Install base packages] ***************************
Thursday 03 December 2026  12:56:14 +0000 (0:00:01.540)       0:00:01.580 *****
ok: [gpu1]

TASK [gpulab.cluster.common : Write the baseline's configuration files] ********
Thursday 03 December 2026  12:56:16 +0000 (0:00:02.600)       0:00:04.180 *****
ok: [gpu1]

TASK [gpulab.cluster.slurm : Write slurm.conf and cgroup.conf] *****************
Thursday 03 December 2026  12:56:17 +0000 (0:00:00.560)       0:00:04.740 *****
ok: [gpu1]

RUNNING HANDLER [gpulab.cluster.slurm : gpulab slurm restart slurmd] ***********
Thursday 03 December 2026  12:58:20 +0000 (0:00:03.000)       0:00:07.740 *****
changed: [gpu1]

PLAY RECAP *********************************************************************
Thursday 03 December 2026  12:58:18 +0000 (0:02:01.250)       0:02:05.990 *****
"""


def test_each_task_gets_the_time_on_the_next_stamp_and_roles_add_up():
    tasks = run_profile.profile(LOG.splitlines())
    assert tasks == [
        ("Gather facts where Python exists", 1.54),
        ("gpulab.cluster.common : Install base packages", 2.6),
        ("gpulab.cluster.common : Write the baseline's configuration files", 0.56),
        ("gpulab.cluster.slurm : Write slurm.conf and cgroup.conf", 3.0),
        ("gpulab.cluster.slurm : gpulab slurm restart slurmd", 121.25),
    ]
    rows = run_profile.per_role(tasks)
    assert [(role, n, round(s, 2)) for role, n, s in rows] == [
        ("gpulab.cluster.slurm", 2, 124.25),
        ("gpulab.cluster.common", 2, 3.16),
        ("(plays)", 1, 1.54),
    ]
