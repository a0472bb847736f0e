"""Rolling upgrade (playbooks/upgrade.yml) of Debian's packages on the Slurm cluster: the controller with
its accounting dump, then one compute node at a time behind a drain and a health gate.

Runs after test_slurm.py, which has added slurm-gpu3 (add-node.yml): three compute nodes. Each node is
first put one tzdata behind (the oldest version the archive offers), so there is a real upgrade to do
(besides whatever Debian updated since the test image was built: the upgrade takes those too).
The gate is validation's node check; nccl-tests inside the node is off here (no stand-in in this file).
"""

import json
import re
import subprocess
import threading

import pytest
from polling import wait_for
from slurm_helpers import SCENARIO, TWO_GPUS, as_user, fake_gpus, node_state

NODES = ("slurm-gpu1", "slurm-gpu2", "slurm-gpu3")
SETTINGS = {"validation_nccl_tests": False}
JOB_OUT = "/var/tmp/upgrade-job.out"
RELEASE = "/var/tmp/upgrade-job.release"  # the job ends once the test creates this on its node


def upgrade(ansible_playbook, *args, settings=None):
    extra = json.dumps({**SETTINGS, **(settings or {})})
    return ansible_playbook(
        "playbooks/upgrade.yml", *args, "-e", extra, inventories=(SCENARIO / "add-node.yml",), timeout=900
    )


def tzdata(host):
    return host.check_output("dpkg-query -W -f '${Version}' tzdata")


def sinfo_state(ctl, name):
    return ctl.check_output(f"sinfo -h -N -n {name} -o %t").split()[0]


def pending_with_tzdata(name):
    return rf"{name}: \d+ package\(s\) to upgrade \([^)]*\btzdata\b[^)]*\); no reboot needed"


@pytest.fixture(scope="module")
def versions(ctl, node):
    """(old, new): every node at the archive's oldest tzdata, whose upgrade candidate is newer."""
    offered = ctl.check_output("apt-cache madison tzdata | awk '{print $3}'").split()
    old, new = offered[-1], offered[0]
    assert old != new, offered
    for host in (ctl, *(node(name) for name in NODES)):
        host.check_output(f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades tzdata={old}")
        assert tzdata(host) == old
    for name in NODES:
        fake_gpus(node(name), TWO_GPUS)
    yield old, new
    for name in NODES:
        node(name).check_output("rm -f /usr/local/bin/nvidia-smi /usr/local/share/gpulab-query.csv")


def recap_changed(stdout):
    return {host: int(n) for host, n in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", stdout, re.M)}


@pytest.mark.parametrize(
    ("args", "settings", "message"),
    [
        ((), {"upgrade_batch_size": 0}, "upgrade_batch_size must be a whole number of at least 1, got 0"),
        ((), {"upgrade_drain_timeout": 0}, "upgrade_drain_timeout must be a whole number of at least 1, got 0"),
        (
            ("--tags", "nvidia_drivers"),
            {},
            "upgrade.yml does not know the tag(s) nvidia_drivers; it upgrades by: packages, reboot, nvidia_driver,",
        ),
    ],
)
def test_bad_input_is_refused_before_any_node_is_drained(
    ansible_playbook, ctl, node, versions, args, settings, message
):
    run = upgrade(ansible_playbook, *args, settings=settings)
    assert run.returncode != 0
    assert message in run.stdout, run.stdout[-3000:]
    assert "upgrade.yml changed nothing" in run.stdout
    for name in NODES:
        assert sinfo_state(ctl, name) == "idle"
        assert tzdata(node(name)) == versions[0]


def test_check_mode_shows_each_nodes_work_and_drains_nothing(ansible_playbook, ctl, node, versions):
    gpu3 = node("slurm-gpu3")
    gpu3.check_output("touch /run/reboot-required")  # as a package that wants a reboot leaves it
    try:
        run = upgrade(ansible_playbook, "--check")
    finally:
        gpu3.check_output("rm -f /run/reboot-required")
    assert run.returncode == 0, run.stdout[-3000:]
    for name in NODES[:2]:
        assert re.search(pending_with_tzdata(name), run.stdout), name
    # A container runs its host's kernel: the decision says why it would reboot, and that it will not.
    assert (
        "a reboot would be needed (/run/reboot-required exists (a package asked for a reboot)), "
        "but this is a container: it runs its host's kernel, so it is not rebooted"
    ) in run.stdout
    assert re.search(pending_with_tzdata(r"slurm-mgmt \(Slurm controller\)"), run.stdout)
    for name in NODES:
        assert sinfo_state(ctl, name) == "idle"
        assert tzdata(node(name)) == versions[0]
    assert ctl.run("ls /var/backups/gpulab/slurm_acct_db-*.sql.gz").rc != 0  # no dump in check mode


@pytest.fixture(scope="module")
def stopped_at_gpu2(ansible_playbook, ctl, node, versions):
    """A job runs on gpu1 when the upgrade starts; gpu2's gate is made to fail (its GPU query sees one
    GPU of two, while nvidia-smi -L, which the Slurm node check reads, still lists both)."""
    gpu1 = node("slurm-gpu1")
    gpu1.check_output(f"rm -f {JOB_OUT} {RELEASE}")
    job = as_user(
        ctl,
        "alice",
        f"sbatch --parsable -w slurm-gpu1 -t 10 -o {JOB_OUT} --wrap "
        f"'echo started; while [ ! -e {RELEASE} ]; do sleep 1; done; echo finished'",
    ).strip()
    assert wait_for(lambda: "RUNNING" in ctl.check_output(f"squeue -h -j {job} -o %T"), 60)
    fake_gpus(node("slurm-gpu2"), TWO_GPUS.splitlines(keepends=True)[0])

    # The job ends only once gpu1 is draining with it still running: the upgrade waits for it.
    seen = {}

    def release_when_draining():
        seen["draining"] = wait_for(lambda: sinfo_state(ctl, "slurm-gpu1") == "drng", 300)  # drained, job on it
        seen["job_state_then"] = ctl.check_output(f"squeue -h -j {job} -o %T")
        gpu1.check_output(f"touch {RELEASE}")

    watcher = threading.Thread(target=release_when_draining)
    watcher.start()
    try:
        run = upgrade(ansible_playbook)
    except subprocess.TimeoutExpired:
        gpu1.run(f"touch {RELEASE}")
        raise
    watcher.join()
    return run, job, seen


def test_first_node_drained_around_its_running_job_which_finishes_intact(ctl, node, versions, stopped_at_gpu2):
    run, job, seen = stopped_at_gpu2
    assert seen["draining"] is True and seen["job_state_then"] == "RUNNING", seen
    accounting = ctl.check_output(f"sacct -n -X -P -j {job} -o State,NodeList,End")
    state, nodes, end = accounting.split("|")
    assert (state, nodes) == ("COMPLETED", "slurm-gpu1")
    assert node("slurm-gpu1").file(JOB_OUT).content_string == "started\nfinished\n"
    # tzdata moved on gpu1 only after the job had ended.
    upgraded = node("slurm-gpu1").check_output("grep ' upgrade tzdata:' /var/log/dpkg.log | tail -1 | cut -c1-19")
    assert upgraded >= end.replace("T", " "), (upgraded, end)
    assert tzdata(node("slurm-gpu1")) == versions[1]
    assert sinfo_state(ctl, "slurm-gpu1") == "idle"
    assert "slurm-gpu1: no reboot needed: the node runs what is installed" in run.stdout


def test_failing_gate_stops_the_rollout_with_the_node_drained_and_the_next_untouched(
    ctl, node, versions, stopped_at_gpu2
):
    run, _job, _seen = stopped_at_gpu2
    assert run.returncode != 0
    message = next(line for line in run.stdout.splitlines() if "failed its health gate" in line)
    print(message.strip())
    assert "slurm-gpu2 failed its health gate after the upgrade: gpu gpu_count: 1 GPUs found" in message
    assert "the nodes after it were not touched" in message
    state, reason = node_state(ctl, "slurm-gpu2")
    assert "DRAIN" in state and reason.startswith("gpulab: upgrade health gate failed: gpu gpu_count"), reason
    assert tzdata(node("slurm-gpu2")) == versions[1]  # upgraded, then judged
    assert tzdata(node("slurm-gpu3")) == versions[0]  # never reached
    assert sinfo_state(ctl, "slurm-gpu3") == "idle"
    assert "slurm-gpu3" not in run.stdout.split("Compute nodes, one batch at a time", 1)[1].split("PLAY RECAP")[0]


def test_controller_dumped_accounting_first_and_the_dump_restores(ctl, versions, stopped_at_gpu2):
    _run, job, _seen = stopped_at_gpu2
    assert tzdata(ctl) == versions[1]
    dumps = ctl.check_output("ls /var/backups/gpulab/").split()
    assert len(dumps) == 1 and re.fullmatch(r"slurm_acct_db-\d{8}T\d{6}Z\.sql\.gz", dumps[0]), dumps
    sql = "mysql -N -B"
    ctl.check_output(f"{sql} -e 'DROP DATABASE IF EXISTS gpulab_restore_check; CREATE DATABASE gpulab_restore_check'")
    try:
        ctl.check_output(f"zcat /var/backups/gpulab/{dumps[0]} | {sql} gpulab_restore_check")
        query = "SELECT id_job, job_name, id_user FROM {}.gpulab_job_table ORDER BY id_job"
        restored = ctl.check_output(f'{sql} -e "{query.format("gpulab_restore_check")}"').splitlines()
        live = ctl.check_output(f'{sql} -e "{query.format("slurm_acct_db")}"').splitlines()
        # The job that ran during the upgrade is in the dump as slurmdbd had it then, which need not be final
        # (a fresh CI run's dump held it as "allocation", uid 0, where the live row later read "wrap", alice's
        # uid): it is compared by its id. Every other job had ended, and its row must restore as it is.
        assert any(row.split("\t")[0] == job for row in restored), restored
        ended = [row for row in restored if row.split("\t")[0] != job]
        assert ended and ended == [row for row in live[: len(restored)] if row.split("\t")[0] != job]
    finally:
        ctl.check_output(f"{sql} -e 'DROP DATABASE IF EXISTS gpulab_restore_check'")


def test_once_fixed_the_node_resumes_and_the_rollout_goes_on(ansible_playbook, ctl, node, versions, stopped_at_gpu2):
    fake_gpus(node("slurm-gpu2"), TWO_GPUS)
    run = upgrade(ansible_playbook)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "drained by an earlier upgrade run: the health gate decides whether it resumes" in run.stdout
    assert "slurm-gpu1: 0 package(s) to upgrade; no reboot needed" in run.stdout
    for name in NODES:
        assert tzdata(node(name)) == versions[1]
        # Bounded by slurmctld's ping interval: a node may show idle* until its next ping answers.
        assert wait_for(lambda name=name: sinfo_state(ctl, name) == "idle", 200), (name, sinfo_state(ctl, name))
    assert node_state(ctl, "slurm-gpu2") == ("IDLE", "")


def test_nothing_to_upgrade_drains_nothing_and_changes_nothing(ansible_playbook, ctl, versions, stopped_at_gpu2):
    run = upgrade(ansible_playbook)
    assert run.returncode == 0, run.stdout[-3000:]
    assert recap_changed(run.stdout) == dict.fromkeys(("slurm-mgmt", *NODES), 0), run.stdout[-2000:]
    assert run.stdout.count("nothing to do, not drained") == len(NODES)
    assert len(ctl.check_output("ls /var/backups/gpulab/").split()) == 1  # no second dump
