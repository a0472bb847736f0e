"""A real Slurm cluster: scheduling across nodes, GPUs, accounting, fair share, self-draining checks."""

import json
import shlex

from polling import wait_for
from slurm_helpers import ROOT, SCENARIO, TWO_GPUS, as_user, fake_gpus, node_state

COMPUTE = ("slurm-gpu1", "slurm-gpu2")


def node_check_now(ctl, host):
    """Run the configured HealthCheckProgram on a node now, as slurmd does (root, empty environment)."""
    program = ctl.check_output("scontrol show config | awk '$1 == \"HealthCheckProgram\" {print $3}'")
    assert program, "slurm.conf names no HealthCheckProgram"
    return host.run(f"env -i {program}")


def active_since(host, unit):
    return host.check_output(f"systemctl show {unit} -p ActiveEnterTimestampMonotonic --value")


def test_both_compute_nodes_idle_in_gpu_partition(ctl):
    def idle():
        out = ctl.check_output("sinfo -h -p gpu -N -o '%N %t'")
        return sorted(out.splitlines()) == [f"{n} idle" for n in COMPUTE] and out

    assert idle(), ctl.check_output("sinfo -N")
    assert ctl.check_output("scontrol show partition gpu").count("Default=YES") == 1


def test_without_the_preset_nothing_preempts(ctl):
    # slurm_preemption is off here: slurm.conf as before the preset, and only Slurm's own QOS.
    assert "Preempt" not in ctl.file("/etc/slurm/slurm.conf").content_string
    assert ctl.check_output("scontrol show config | awk '$1 == \"PreemptType\" {print $3}'") == "preempt/none"
    assert ctl.check_output("sacctmgr -n -P show qos format=Name") == "normal"


def test_srun_on_two_nodes(ctl):
    out = as_user(ctl, "alice", "srun -N2 -t 1 hostname")
    assert sorted(out.split()) == list(COMPUTE)


def test_batch_job_recorded_with_user_and_account(ctl, node):
    job = as_user(ctl, "alice", "sbatch --parsable -N2 -t 1 -D /tmp -o /tmp/job-%j.out --wrap 'srun hostname'").strip()

    def finished():
        row = ctl.check_output(f"sacct -n -P -X -j {job} --format=User,Account,State,NNodes").strip()
        return row if row.split("|")[2:3] in (["COMPLETED"], ["FAILED"]) else None

    assert wait_for(finished, 60) == "alice|vision|COMPLETED|2"
    # The batch script ran on the first node; its srun printed both names.
    output = node(COMPUTE[0]).file(f"/tmp/job-{job}.out").content_string
    assert sorted(output.split()) == list(COMPUTE)


def test_gpu_request_gets_its_device_and_too_many_is_refused(ctl):
    out = as_user(ctl, "alice", "srun -N1 -t 1 --gres=gpu:1 printenv CUDA_VISIBLE_DEVICES")
    assert out.strip() == "0"
    # Device cgroup: the job sees only the GPU it was given.
    shown = as_user(ctl, "alice", "srun -N1 -t 1 --gres=gpu:1 bash -c 'cat /dev/nvidia1 2>&1 || true'")
    assert "Operation not permitted" in shown
    refused = as_user(ctl, "alice", "srun -N1 -t 1 --gres=gpu:3 true", check=False)
    assert refused.rc != 0
    assert "Requested node configuration is not available" in refused.stderr


def test_fair_share_tree_and_enforcement(ctl):
    tree = ctl.check_output("sshare -n -P -a --format=Account,User,RawShares")
    # sshare indents accounts and users by depth in the tree.
    rows = {tuple(f.strip() for f in line.split("|")[:2]): line.split("|")[2] for line in tree.splitlines()}
    assert rows[("vision", "")] == "1" and rows[("nlp", "")] == "2"
    assert ("vision", "alice") in rows and ("nlp", "bob") in rows
    refused = as_user(ctl, "mallory", "srun -N1 -t 1 hostname", check=False)
    assert refused.rc != 0
    assert "Invalid account or account/partition combination specified" in refused.stderr


def test_munge_key_shared_and_private(ctl, node):
    digests = {h: node(h).check_output("sha256sum /etc/munge/munge.key").split()[0] for h in ("slurm-mgmt", *COMPUTE)}
    assert len(set(digests.values())) == 1
    key = ctl.file("/etc/munge/munge.key")
    assert (key.user, key.mode) == ("munge", 0o400)
    assert ctl.file("/etc/slurm/slurmdbd.conf").mode == 0o600


def test_gres_conf_lists_devices_without_nvml(node):
    gres = node("slurm-gpu1").file("/etc/slurm/gres.conf").content_string
    assert "Name=gpu File=/dev/nvidia[0-1]" in gres
    assert "AutoDetect=nvml" not in gres  # Debian's slurmd has no NVML plugin


def test_missing_gpu_drains_the_node_and_its_return_resumes_it(ctl, node):
    gpu2 = node("slurm-gpu2")
    gpu2.check_output("rm /dev/nvidia1")
    try:
        drained = wait_for(lambda: "DRAIN" in node_state(ctl, "slurm-gpu2")[0] and node_state(ctl, "slurm-gpu2"), 40)
        assert drained, node_state(ctl, "slurm-gpu2")
        assert drained[1].startswith("gpulab: 1 of 2 GPU devices present")
    finally:
        gpu2.check_output("mknod -m 666 /dev/nvidia1 c 195 1")
    assert wait_for(lambda: node_state(ctl, "slurm-gpu2") == ("IDLE", ""), 40), node_state(ctl, "slurm-gpu2")


def test_an_administrators_drain_is_left_alone(ctl, node):
    ctl.check_output("scontrol update NodeName=slurm-gpu1 State=DRAIN Reason=maintenance")
    try:
        check = node_check_now(ctl, node("slurm-gpu1"))
        assert check.rc == 0, check.stdout + check.stderr  # healthy: it found both GPUs
        state, reason = node_state(ctl, "slurm-gpu1")
        assert "DRAIN" in state and reason.startswith("maintenance")
    finally:
        ctl.check_output("scontrol update NodeName=slurm-gpu1 State=RESUME")


def validate(ansible_playbook, tmp_path):
    settings = {
        "validation_drain": True,
        "validation_collective_bench": False,
        "validation_report_dir": str(tmp_path),
        "validation_net_line_rate_gbps": 100,
    }
    return ansible_playbook("playbooks/validate.yml", "--skip-tags", "validate_long", "-e", json.dumps(settings))


# Test stand-in for nccl-tests: each rank notes where it ran and what it was granted; rank 0 prints
# a recorded two-node run (nccl-tests itself cannot be built here: its source is unreachable).
FAKE_NCCL = r"""#!/bin/bash
echo "${SLURM_JOB_ID:-none} ${SLURM_PROCID:-none} $(hostname) ${CUDA_VISIBLE_DEVICES:-none} $*" >> /var/tmp/ranks
[ "${SLURM_PROCID:-0}" = 0 ] && cat /usr/local/share/gpulab-nccl.txt
exit 0
"""
NCCL_RUN = (ROOT / "tests/unit/fixtures/nccl/current_2node_roce_pass.txt").read_text()


def fake_nccl_tests(host):
    host.check_output(f"printf %s {shlex.quote(NCCL_RUN)} > /usr/local/share/gpulab-nccl.txt")
    host.check_output(
        f"mkdir -p /opt/nccl-tests/build && printf %s {shlex.quote(FAKE_NCCL)} > /opt/nccl-tests/build/all_reduce_perf"
        " && chmod 755 /opt/nccl-tests/build/all_reduce_perf && rm -f /var/tmp/ranks"
    )


def test_declared_gpus_that_cannot_be_found_fail_validation(ansible_playbook, ctl, node, tmp_path):
    # The compute nodes declare gpulab_gpu_count: 2 and have no driver: that is a failure, not "unavailable".
    run = validate(ansible_playbook, tmp_path)
    assert run.returncode == 2, run.stdout[-3000:]
    for name in COMPUTE:
        assert f"{name} gpu_count: 2 GPUs declared, none could be read" in run.stdout
        state, reason = node_state(ctl, name)
        assert "DRAIN" in state and reason.startswith("gpulab: validate: gpu_count"), (name, state, reason)
    for name in COMPUTE:  # back to the healthy state the next tests start from
        ctl.check_output(f"scontrol update NodeName={name} State=RESUME")


def test_validate_drains_a_failing_node_and_resumes_it_once_healthy(ansible_playbook, ctl, node, tmp_path):
    gpu1, gpu2 = node("slurm-gpu1"), node("slurm-gpu2")
    fake_gpus(gpu1, TWO_GPUS)
    fake_gpus(gpu2, TWO_GPUS.splitlines(keepends=True)[0])  # the query sees one GPU of the two
    for host in (gpu1, gpu2):
        fake_nccl_tests(host)
    try:
        run = validate(ansible_playbook, tmp_path)
        assert run.returncode == 2, run.stdout[-3000:]
        assert "slurm-gpu2 gpu_count: 1 GPUs found via" in run.stdout
        # nccl-tests across the nodes ran as one Slurm job step: 2 ranks on each node, the node's 2 GPUs
        # granted (srun --mpi=pmix needs libpmix2, which the role installs).
        ranks = sorted(
            line.split() for h in (gpu1, gpu2) for line in h.file("/var/tmp/ranks").content_string.splitlines()
        )
        in_node = [r for r in ranks if r[0] == "none"]  # each node's own run, outside Slurm
        in_job = [r for r in ranks if r[0] != "none"]
        assert len(in_node) == 2 and len({r[0] for r in in_job}) == 1, ranks
        assert sorted((r[1], r[2]) for r in in_job) == [
            ("0", "slurm-gpu1"),
            ("1", "slurm-gpu1"),
            ("2", "slurm-gpu2"),
            ("3", "slurm-gpu2"),
        ], ranks
        assert all(r[3] == "0,1" and r[4:6] == ["-b", "256M"] for r in in_job), ranks
        report = json.loads((tmp_path / "latest" / "report.json").read_text())
        across = report["cluster"]["nccl_across"]
        busbw = next(c for c in across["checks"] if c["check"] == "nccl_busbw")
        assert (across["status"], busbw["status"], busbw["threshold"]) == ("pass", "pass", 10.8), across
        assert report["expected_busbw"] == 12.0
        state, reason = node_state(ctl, "slurm-gpu2")
        assert "DRAIN" in state and reason.startswith("gpulab: validate: gpu_count"), (state, reason)
        assert "DRAIN" not in node_state(ctl, "slurm-gpu1")[0]
        # The node check, which finds 2 GPUs and passes, must not lift validate's drain.
        check = node_check_now(ctl, gpu2)
        assert check.rc == 0, check.stdout + check.stderr
        assert node_state(ctl, "slurm-gpu2")[1].startswith("gpulab: validate: gpu_count")
        fake_gpus(gpu2, TWO_GPUS)  # both GPUs back
        run = validate(ansible_playbook, tmp_path)
        assert run.returncode == 0, run.stdout[-3000:]
        # gpu2 was still drained when this run began: the run across nodes left it out and said so.
        across = json.loads((tmp_path / "latest" / "report.json").read_text())["cluster"]["nccl_across"]
        assert [c["check"] for c in across["checks"]] == ["nccl_nodes", "nccl_run"], across
        assert "slurm-gpu2 (IDLE+DRAIN: gpulab: validate: gpu_count" in across["checks"][0]["message"]
        assert wait_for(lambda: node_state(ctl, "slurm-gpu2") == ("IDLE", ""), 30), node_state(ctl, "slurm-gpu2")
        report = json.loads((tmp_path / "latest" / "report.json").read_text())
        gpu = report["nodes"]["slurm-gpu1"]["sections"]["gpu"]
        assert gpu["status"] == "pass"
        assert {c["status"] for c in gpu["checks"] if "ecc" in c["check"]} == {"n/a"}  # GeForce: no ECC
        assert (
            report["cluster"]["consistency"]["checks"][2]["message"]
            == "2 nodes run 550.127.05 (not installed on slurm-gpu3, slurm-mgmt)"
        )
    finally:
        for host in (gpu1, gpu2):
            host.check_output(
                "rm -rf /usr/local/bin/nvidia-smi /usr/local/share/gpulab-query.csv /opt/nccl-tests "
                "/usr/local/share/gpulab-nccl.txt /var/tmp/ranks"
            )


def test_config_change_restarts_only_what_it_must(ansible_playbook, ctl, node):
    before = {
        "slurmdbd": active_since(ctl, "slurmdbd"),
        "mariadb": active_since(ctl, "mariadb"),
        "slurmctld": active_since(ctl, "slurmctld"),
        "slurmd": active_since(node("slurm-gpu1"), "slurmd"),
    }
    run = ansible_playbook("playbooks/slurm.yml", "-e", json.dumps({"slurm_config": {"MaxJobCount": 20000}}))
    assert run.returncode == 0, run.stdout[-3000:]
    assert ctl.file("/etc/slurm/slurm.conf").contains("^MaxJobCount=20000$")
    assert active_since(ctl, "slurmdbd") == before["slurmdbd"]
    assert active_since(ctl, "mariadb") == before["mariadb"]
    assert active_since(ctl, "slurmctld") != before["slurmctld"]
    assert active_since(node("slurm-gpu1"), "slurmd") != before["slurmd"]
    # Back to the scenario's configuration, so the next tests see it.
    assert ansible_playbook("playbooks/slurm.yml").returncode == 0


def test_third_node_joins_with_limit_without_touching_the_others(ansible_playbook, ctl, node):
    before = active_since(node("slurm-gpu1"), "slurmd")
    run = ansible_playbook(
        "playbooks/slurm.yml", "--limit", "slurm-gpu3,slurm-mgmt", inventories=(SCENARIO / "add-node.yml",)
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert "slurm-gpu1" not in run.stdout
    assert wait_for(lambda: "slurm-gpu3 idle" in ctl.check_output("sinfo -h -N -o '%N %t'"), 60)
    assert active_since(node("slurm-gpu1"), "slurmd") == before
    out = as_user(ctl, "alice", "srun -N1 -t 1 -w slurm-gpu3 hostname")
    assert out.strip() == "slurm-gpu3"
