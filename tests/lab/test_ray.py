"""Ray in the lab: the standing cluster (head on mgmt1, workers on gpu1 and gpu2, each as a systemd service)
and Ray inside a Slurm allocation (the ray template running the Ray Tune example on both nodes)."""

import json
import os
import re
import shlex
import subprocess

import pytest
from helpers import ROOT, on, playbook, submit, wait_for

HEAD, WORKERS = "mgmt1", ("gpu1", "gpu2")
ENV = "/opt/gpulab/train"
WORK = "/mnt/cephfs/lab-ray"
# A task pinned to each live node with CPUs: the hostname it ran on, by node address. Run as the Ray user.
PINNED = """
import json, socket, ray
ray.init()
@ray.remote(num_cpus=1)
def host():
    return socket.gethostname()
ips = [n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")]
pinned = [host.options(resources={f"node:{ip}": 0.01}).remote() for ip in ips]
print(json.dumps(dict(zip(ips, ray.get(pinned, timeout=120)))))
"""
# Ray's processes (bracketed: not the shell that runs pgrep); root's are a job's, the standing cluster's are
# the ray user's.
RAY_PROCESSES = r"[r]aylet|[g]cs_server|[r]ay::|site-packages/[r]ay/"


def address(node):
    """The node's address on the lab's one network (eth0; Docker in the node adds docker0)."""
    return on(node, "ip -4 -o addr show eth0").split()[3].split("/")[0]


def cluster():
    return json.loads(on(HEAD, "cat /etc/gpulab/ray-cluster.json"))


def alive():
    """address -> resources of each node Ray holds ALIVE."""
    listed = on(HEAD, f"{ENV}/bin/ray list nodes --format json --limit 10000 --address {cluster()['dashboard']}")
    return {n["node_ip"]: n["resources_total"] for n in json.loads(listed) if n["state"] == "ALIVE"}


def ray_health():
    """The validation report's Ray check, run on the head as validate.yml runs it: (status, [(check, code)])."""
    run = subprocess.run(
        ["ansible", HEAD, "-m", "gpulab.cluster.ray_health", "-a", "fail_on=never"],
        cwd=ROOT,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(re.search(rf"^{HEAD} \| SUCCESS => (\{{.*?^\}})", run.stdout, re.S | re.M).group(1))
    return result["status"], [(c["check"], c["code"]) for c in result["checks"]]


def test_the_head_lists_both_workers_with_their_cpus_and_the_declared_gpu():
    nodes = alive()
    for worker in WORKERS:
        resources = nodes[address(worker)]
        assert resources["CPU"] == float(on(worker, "nproc")) and resources["GPU"] == 1.0, (worker, resources)
    assert "CPU" not in nodes[address(HEAD)]  # the head only coordinates (ray_head_cpus: 0)
    status = on(HEAD, f"{ENV}/bin/ray status --address {address(HEAD)}:6379")
    assert len(re.findall(r"^ 1 node_", status, re.M)) == 3 and " 0.0/2.0 GPU" in status, status
    assert ray_health() == ("pass", [("ray.worker.gpu1", None), ("ray.worker.gpu2", None), ("ray.workers", None)])


def test_a_task_pinned_to_each_worker_reports_that_worker_s_hostname():
    driver = f"runuser -u ray -- env RAY_ADDRESS={address(HEAD)}:6379 {ENV}/bin/python -c {shlex.quote(PINNED)}"
    ran = json.loads(on(HEAD, driver, timeout=180).splitlines()[-1])
    assert ran == {address(w): w for w in WORKERS}


def test_the_services_run_unprivileged_and_the_dashboard_listens_on_the_management_address_only():
    for node, unit in [(HEAD, "gpulab-ray-head"), *((w, "gpulab-ray-worker") for w in WORKERS)]:
        assert on(node, f"systemctl show -p User --value {unit}") == "ray"
        assert on(node, f"pgrep -u root -f '{RAY_PROCESSES}' || :") == "", node
    listening = on(HEAD, "ss -ltnH 'sport = :8265'").split()
    assert listening[3] == f"{address(HEAD)}:8265", listening


def test_a_stopped_worker_drops_out_and_the_report_names_it_and_a_started_one_comes_back():
    gpu2 = address("gpu2")
    on("gpu2", "systemctl stop gpulab-ray-worker")
    try:
        assert wait_for(lambda: gpu2 not in alive(), 60)
        status, checks = ray_health()
        assert status == "fail"
        assert checks == [
            ("ray.worker.gpu1", None),
            ("ray.worker.gpu2", "RAY_WORKER_MISSING"),
            ("ray.workers", "RAY_WORKER_MISSING"),
        ]
    finally:
        on("gpu2", "systemctl start gpulab-ray-worker")
    assert wait_for(lambda: gpu2 in alive(), 90)
    assert ray_health()[0] == "pass"


def test_a_worker_whose_ray_differs_from_the_head_s_refuses_to_start_naming_both():
    dropin = "/run/systemd/system/gpulab-ray-worker.service.d"
    argv = re.search(r"argv\[\]=([^;]*) ;", on("gpu2", "systemctl show -p ExecStart --value gpulab-ray-worker"))
    python = argv.group(1).split()[4]
    # As if the head ran Ray 2.59.0 (the unit holds the head's versions as the ray role read them).
    changed = argv.group(1).strip().replace(f" 2.60.0 {python} -- ", f" 2.59.0 {python} -- ", 1)
    on(
        "gpu2",
        f"mkdir -p {dropin} && printf '[Service]\\nExecStart=\\nExecStart=%s\\n' {shlex.quote(changed)} "
        f"> {dropin}/test.conf && systemctl daemon-reload",
    )
    try:
        on("gpu2", "systemctl restart gpulab-ray-worker")
        # failed, not "activating" (a restart pending): it is not restarted
        assert wait_for(lambda: on("gpu2", "systemctl is-active gpulab-ray-worker || :") == "failed", 30)
        journal = on("gpu2", "journalctl -u gpulab-ray-worker -n 20 --no-pager")
        assert (
            f"this worker has Ray 2.60.0 on Python {python}, the head mgmt1 has Ray 2.59.0 on Python {python}: "
            "not starting" in journal
        ), journal
    finally:
        on(
            "gpu2",
            f"rm -rf {dropin} && systemctl daemon-reload && systemctl reset-failed gpulab-ray-worker; "
            "systemctl start gpulab-ray-worker",
        )
    assert wait_for(lambda: address("gpu2") in alive(), 90)


def test_a_ray_version_other_than_the_environment_s_is_refused_naming_the_variable():
    run = playbook("playbooks/training.yml", "--tags", "ray", "-e", "ray_version=2.59.0")
    assert run.returncode != 0
    assert (
        "ray_version is 2.59.0 but the training environment on gpu1 holds Ray 2.60.0 (training_versions.ray)"
        in run.stdout
    ), run.stdout[-3000:]
    assert "Start the Ray service" not in run.stdout  # nothing restarted


@pytest.fixture
def work():
    on("gpu1", f"rm -rf {WORK} && mkdir -p {WORK}")
    yield WORK
    on("gpu1", f"rm -rf {WORK} /mnt/cephfs/checkpoints/root/ray-lab-*")


def test_a_ray_job_runs_tune_across_both_nodes_and_leaves_no_ray_process_behind(work):
    rc, output, err = submit(
        work, "ray-lab", "-N2", "--", "/opt/gpulab/jobs/tune_digits.py", "--epochs", "2", job="ray"
    )
    assert rc == 0, output + err
    result = json.loads(output.split("GPULAB_RESULT ", 1)[1].splitlines()[0])
    assert result["nodes"] == list(WORKERS) and result["trial_hosts"] == list(WORKERS), result
    assert result["errors"] == 0 and len(result["trials"]) == 4 and result["best"]["accuracy"] > 0.8, result
    for worker in WORKERS:
        assert on(worker, f"pgrep -a -u root -f '{RAY_PROCESSES}' || :") == "", worker
        assert on(worker, "ls -d /tmp/gpulab-ray-* 2>/dev/null || :") == "", worker
    assert {address(w) for w in WORKERS} <= set(alive())  # the standing cluster is untouched
