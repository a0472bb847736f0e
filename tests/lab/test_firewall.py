"""The firewall between the traffic classes (role firewall, on in the lab): what the plan allows connects,
what it does not is dropped, per class and direction; a change that cuts Ansible's SSH is rolled back.

The lab's containers have one NIC (management); for these tests each also gets the plan's compute and storage
networks (two Docker networks, the nodes at their planned addresses), removed afterwards. Every other lab test
runs with the firewall on: Slurm, Ceph, the directory, the monitoring scrape and Ray work through it."""

import json
import re
import shlex
import subprocess

import pytest
from helpers import on, playbook

NODES = ["mgmt1", "storage1", "gpu1", "gpu2"]
ADDRESSES = {  # the plan's: address_offset 10 + gpulab_node_index on each class's subnet
    "management": {"mgmt1": "172.30.10.11", "storage1": "172.30.10.12", "gpu1": "172.30.10.13", "gpu2": "172.30.10.14"},
    "compute": {"mgmt1": "172.30.20.11", "storage1": "172.30.20.12", "gpu1": "172.30.20.13", "gpu2": "172.30.20.14"},
    "storage": {"mgmt1": "172.30.30.11", "storage1": "172.30.30.12", "gpu1": "172.30.30.13", "gpu2": "172.30.30.14"},
}
# Test-only openings on ports nothing else uses (7998 stays closed everywhere but between compute nodes). On
# management they go to storage1: the Ray opening lets Ray's nodes (mgmt1, gpu1, gpu2) reach each other on any port.
PROBE_RULES = [
    {
        "name": "probe storage",
        "traffic_class": "storage",
        "ports": [7999],
        "to": ["storage"],
        "from": ["compute", "storage"],
    },
    {"name": "probe management", "traffic_class": "management", "ports": [7999], "to": ["storage1"], "from": ["gpu1"]},
]
# Accepts on each port of argv and greets: a probe that reads the greeting has a connection both ways.
LISTEN = """
import socket, sys, threading
def serve(port):
    server = socket.create_server(("0.0.0.0", port))
    while True:
        conn, _ = server.accept()
        conn.sendall(b"hello\\n")
        conn.close()
threads = [threading.Thread(target=serve, args=(int(p),)) for p in sys.argv[1:]]
[t.start() for t in threads]
[t.join() for t in threads]
"""
# argv[1]: [[address, port], ...] -> {"address:port": open|refused|dropped}, all at once, 3 s each at most.
PROBE = """
import json, socket, sys, concurrent.futures
def probe(target):
    try:
        with socket.create_connection(tuple(target), timeout=3) as conn:
            # The listener greets; a service's port (which may wait for the client) counts once connected.
            return "open" if target[1] not in (7998, 7999) or conn.recv(16).startswith(b"hello") else "silent"
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return "dropped"
targets = json.loads(sys.argv[1])
with concurrent.futures.ThreadPoolExecutor(len(targets)) as pool:
    print(json.dumps({f"{a}:{p}": r for (a, p), r in zip(targets, pool.map(probe, targets))}))
"""


def docker(*args):
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True, timeout=60).stdout


@pytest.fixture(scope="module")
def classes():
    """Compute and storage networks on every node for this module, the probe openings in force, a listener on
    7998 and 7999 everywhere; all of it undone afterwards (the firewall back to the inventory's rules)."""
    for name in ("compute", "storage"):
        subnet = ADDRESSES[name]["mgmt1"].rsplit(".", 1)[0] + ".0/24"
        docker("network", "create", "--subnet", subnet, f"gpulab-lab-{name}")
        for node in NODES:
            docker("network", "connect", "--ip", ADDRESSES[name][node], f"gpulab-lab-{name}", node)
    for node in NODES:
        on(node, f"systemd-run --unit=gpulab-fw-probe python3 -c {shlex.quote(LISTEN)} 7998 7999")
    run = playbook("playbooks/network.yml", "--tags", "firewall", "-e", json.dumps({"firewall_rules": PROBE_RULES}))
    try:
        assert run.returncode == 0, run.stdout[-3000:]
        yield run
    finally:
        for node in NODES:
            on(node, "systemctl stop gpulab-fw-probe")
        for name in ("compute", "storage"):
            for node in NODES:
                docker("network", "disconnect", f"gpulab-lab-{name}", node)
            docker("network", "rm", f"gpulab-lab-{name}")
        back = playbook("playbooks/network.yml", "--tags", "firewall")
        assert back.returncode == 0, back.stdout[-3000:]


def probe(source, *targets):
    """{(target node, class, port): result} of connections from `source` to each (node, class, port)."""
    addresses = [[ADDRESSES[cls][node], port] for node, cls, port in targets]
    found = json.loads(on(source, f"python3 -c {shlex.quote(PROBE)} {shlex.quote(json.dumps(addresses))}"))
    return {target: found[f"{a}:{p}"] for target, (a, p) in zip(targets, addresses, strict=True)}


def test_a_change_of_rules_is_loaded_where_it_applies_and_kept(classes):
    changed = dict(re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", classes.stdout, re.M))
    assert {node: int(count) > 0 for node, count in changed.items()} == {
        "mgmt1": False,
        "storage1": True,
        "gpu1": False,
        "gpu2": False,
    }, classes.stdout[-2000:]
    for node in NODES:
        table = on(node, "nft list table inet gpulab")
        assert ('comment "probe storage"' in table) == (node == "storage1"), table
        assert ('comment "probe management"' in table) == (node == "storage1"), table
        unit = "gpulab-firewall"
        assert on(node, f"systemctl is-enabled {unit} && systemctl is-active {unit}") == "enabled\nactive"


def test_management_opens_each_service_to_the_hosts_that_use_it(classes):
    assert probe("gpu1", ("storage1", "management", 7999), ("storage1", "management", 7998)) == {
        ("storage1", "management", 7999): "open",  # probe management: from gpu1 only
        ("storage1", "management", 7998): "dropped",  # in no opening
    }
    assert probe("gpu2", ("storage1", "management", 7999), ("storage1", "management", 9100)) == {
        ("storage1", "management", 7999): "dropped",  # not gpu1
        ("storage1", "management", 9100): "dropped",  # node exporter: for Prometheus's host only
    }
    assert probe("mgmt1", ("storage1", "management", 9100)) == {("storage1", "management", 9100): "open"}
    assert probe("storage1", ("mgmt1", "management", 6817), ("mgmt1", "management", 7998)) == {
        ("mgmt1", "management", 6817): "open",  # slurmctld, from every node
        ("mgmt1", "management", 7998): "dropped",
    }


def test_storage_answers_compute_and_storage_nodes_only(classes):
    assert probe("gpu1", ("storage1", "storage", 7999), ("storage1", "storage", 7998)) == {
        ("storage1", "storage", 7999): "open",
        ("storage1", "storage", 7998): "dropped",
    }
    assert probe("mgmt1", ("storage1", "storage", 7999)) == {("storage1", "storage", 7999): "dropped"}
    # The other direction: the compute node opens nothing on storage.
    assert probe("storage1", ("gpu1", "storage", 7999)) == {("gpu1", "storage", 7999): "dropped"}
    assert "counter packets 0 " not in on("storage1", "nft list chain inet gpulab storage | grep 'counter packets'")


def test_compute_nodes_reach_each_other_on_any_port_and_no_one_else_reaches_them(classes):
    assert probe("gpu1", ("gpu2", "compute", 7998), ("gpu2", "compute", 7999)) == {
        ("gpu2", "compute", 7998): "open",
        ("gpu2", "compute", 7999): "open",
    }
    assert probe("mgmt1", ("gpu2", "compute", 7999)) == {("gpu2", "compute", 7999): "dropped"}
    assert probe("storage1", ("gpu2", "compute", 7999)) == {("gpu2", "compute", 7999): "dropped"}


def test_rules_that_cut_ansibles_ssh_are_rolled_back():
    # Ansible reaches the lab's nodes over SSH (inventory/lab), as it reaches real ones.
    before = on("gpu2", "nft -s list table inet gpulab")  # -s: without the counters
    assert 'tcp dport 22 accept comment "ssh"' in before  # from anywhere: firewall_operator_sources [any]
    # SSH only from the nodes and a subnet the controller (172.30.10.1) is not in.
    cut = {"firewall_operator_sources": ["192.0.2.0/24"], "firewall_rollback_seconds": 30}
    run = playbook("playbooks/network.yml", "--tags", "firewall", "--limit", "gpu2", "-e", json.dumps(cut))
    assert run.returncode != 0
    assert "the new rules did not let a new connection from Ansible through" in run.stdout, run.stdout[-3000:]
    assert "The node loaded its rules from before this run again" in run.stdout
    assert on("gpu2", "nft -s list table inet gpulab") == before
    assert "loaded the rules from before the last change again" in on("gpu2", "journalctl -t gpulab-firewall -o cat")
    # And Ansible reaches it over SSH again, through the rules from before.
    again = playbook("playbooks/network.yml", "--tags", "firewall", "--limit", "gpu2")
    assert again.returncode == 0, again.stdout[-3000:]


def test_turned_off_it_is_taken_down_and_check_mode_only_says_so():
    off = json.dumps({"firewall_enabled": False})
    try:
        check = playbook("playbooks/network.yml", "--tags", "firewall", "--limit", "gpu2", "--check", "-e", off)
        assert check.returncode == 0, check.stdout[-3000:]
        assert re.search(r"^gpu2\s+: ok=\d+\s+changed=1\b", check.stdout, re.M), check.stdout[-2000:]
        assert "table inet gpulab" in on("gpu2", "nft list tables")  # check mode leaves it
        run = playbook("playbooks/network.yml", "--tags", "firewall", "--limit", "gpu2", "-e", off)
        assert run.returncode == 0, run.stdout[-3000:]
        assert "table inet gpulab" not in on("gpu2", "nft list tables")
        assert (
            on("gpu2", "ls /etc/systemd/system/gpulab-firewall.service /etc/gpulab/firewall.nft 2>&1 || :").count(
                "No such file"
            )
            == 2
        )
    finally:
        back = playbook("playbooks/network.yml", "--tags", "firewall", "--limit", "gpu2")
        assert back.returncode == 0, back.stdout[-3000:]
    assert "table inet gpulab" in on("gpu2", "nft list tables")
