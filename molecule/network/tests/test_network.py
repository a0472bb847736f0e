"""What the network role writes for a RoCE, an InfiniBand and an Ethernet plan, and what it applies."""

import json

import pytest

HEADER = "#\n# Ansible managed\n#\n"


def test_roce_plan_renders_two_vlans_on_the_fabric_nic(scenario_host):
    roce = scenario_host("net-roce")
    files = roce.check_output("ls /etc/systemd/network").split()
    assert files == [
        "05-gpulab-gl0.20.netdev",
        "05-gpulab-gl0.20.network",
        "05-gpulab-gl0.30.netdev",
        "05-gpulab-gl0.30.network",
        "05-gpulab-gl0.network",
    ]
    assert roce.file("/etc/systemd/network/05-gpulab-gl0.network").content_string == (
        HEADER + "[Match]\nName=gl0\n\n[Link]\nMTUBytes=9000\n\n[Network]\nLinkLocalAddressing=no\n"
        "ConfigureWithoutCarrier=yes\nVLAN=gl0.20\nVLAN=gl0.30\n"
    )
    assert roce.file("/etc/systemd/network/05-gpulab-gl0.20.netdev").content_string == (
        HEADER + "[NetDev]\nName=gl0.20\nKind=vlan\nMTUBytes=9000\n\n[VLAN]\nId=20\n"
    )
    assert "Address=10.30.0.11/24\n" in roce.file("/etc/systemd/network/05-gpulab-gl0.30.network").content_string
    # Not applied (network_apply: false): the NIC keeps its MTU.
    assert roce.file("/sys/class/net/gl0/mtu").content_string.strip() == "1500"


def test_infiniband_plan_is_applied_address_and_mtu(scenario_host):
    ib = scenario_host("net-ib")
    (link,) = json.loads(ib.check_output("ip -json address show dev ib0"))
    assert link["mtu"] == 65520
    assert [(a["local"], a["prefixlen"]) for a in link["addr_info"] if a["family"] == "inet"] == [("10.20.0.12", 16)]
    assert "configured" in ib.check_output("networkctl status ib0 --no-pager | grep State:")
    assert ib.service("systemd-networkd").is_enabled


def test_management_link_is_left_alone_unless_listed(scenario_host):
    for name in ("net-roce", "net-ib"):
        node = scenario_host(name)
        assert not node.run("ls /etc/systemd/network/*eth0*").stdout
        assert not node.file("/etc/netplan/60-gpulab.yaml").exists
    # net-eth lists management: eth0 gets a static address, default route and DNS in netplan.
    eth = scenario_host("net-eth")
    eth.check_output("netplan generate")
    management = eth.file("/run/systemd/network/10-netplan-eth0.network").content_string
    for line in ("Address=172.30.100.13/24", "Gateway=172.30.100.1", "DNS=172.30.100.1", "LinkLocalAddressing=no"):
        assert f"{line}\n" in management, management
    assert "DHCP" not in management
    # Its rollback helper, netplan flavour: keeps /etc/netplan/60-gpulab.yaml, applies with netplan.
    assert "netplan apply" in eth.file("/usr/local/sbin/gpulab-network").content_string
    eth.check_output("/usr/local/sbin/gpulab-network save")
    assert eth.check_output("tar -tf /var/lib/gpulab/network-saved.tar") == "60-gpulab.yaml"


def test_ethernet_plan_in_netplan_is_accepted_by_netplan_generate(scenario_host):
    eth = scenario_host("net-eth")
    plan = eth.file("/etc/netplan/60-gpulab.yaml")
    assert plan.mode == 0o600
    eth.check_output("netplan generate")
    generated = "/run/systemd/network/10-netplan-"
    netdev = eth.file(f"{generated}bond0.30.netdev").content_string
    assert "Kind=vlan" in netdev and "Id=30" in netdev and "MTUBytes=9000" in netdev
    nic = eth.file(f"{generated}gl0.network").content_string
    assert "Address=10.20.0.13/24" in nic and "VLAN" not in nic
    assert "MTUBytes=9000" in eth.file(f"{generated}gl0.link").content_string
    bond = eth.file(f"{generated}bond0.netdev").content_string
    assert "Kind=bond" in bond and "Mode=active-backup" in bond and "MTUBytes=9000" in bond
    assert "VLAN=bond0.30" in eth.file(f"{generated}bond0.network").content_string
    for member in ("gl1", "gl2"):
        assert "Bond=bond0" in eth.file(f"{generated}{member}.network").content_string


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"network_interfaces": {"compute": "nosuch0"}}, "nosuch0 does not exist here (interfaces: "),
        ({"network_interfaces": {"compute": "eth0"}}, "eth0 carries 172.30.100.12, the address Ansible uses"),
        ({"network_renderer": "ifupdown"}, "network_renderer"),
        ({"network_classes": ["compute", "management"]}, "gpulab_network.networks.management has no interface"),
        (
            {"network_bonds": {"bond0": {"interfaces": ["gl1"], "mode": "rr"}}},
            "network_bonds.bond0.mode must be one of",
        ),
        ({"network_rollback_seconds": 10}, "network_rollback_seconds must be at least 30"),
        ({"network_rollback_seconds": "soon"}, "network_rollback_seconds"),
    ],
)
def test_bad_input_refused_before_anything_is_written(ansible_playbook, extra, message):
    run = ansible_playbook("playbooks/network.yml", "--limit", "net-ib", "-e", json.dumps(extra))
    assert run.returncode != 0
    assert message in run.stdout, run.stdout[-2000:]
    assert "changed=0" in run.stdout


def test_gpulab_network_saves_and_restores_the_files(scenario_host):
    """The rollback's file handling on net-ib (networkd runs there): a change undone by restore."""
    ib = scenario_host("net-ib")
    directory = "/etc/systemd/network"
    before = {
        name: ib.file(f"{directory}/{name}").content_string for name in ib.check_output(f"ls {directory}").split()
    }
    assert list(before) == ["05-gpulab-ib0.network"]
    ib.check_output("/usr/local/sbin/gpulab-network save")
    try:
        ib.check_output(f"sed -i 's/MTUBytes=65520/MTUBytes=9000/' {directory}/05-gpulab-ib0.network")
        ib.check_output(f"printf '[Match]\\nName=gl2\\n' > {directory}/05-gpulab-gl2.network")
        restored = ib.check_output("/usr/local/sbin/gpulab-network restore")
    finally:
        ib.run(f"rm -f {directory}/05-gpulab-gl2.network")
    assert "restored gpulab's network files" in restored
    after = {name: ib.file(f"{directory}/{name}").content_string for name in ib.check_output(f"ls {directory}").split()}
    assert after == before
    assert ib.file("/var/lib/gpulab/network-rolled-back").content_string == restored + "\n"
    (link,) = json.loads(ib.check_output("ip -json address show dev ib0"))
    assert link["mtu"] == 65520


def test_gpulab_network_trial_applies_and_keep_cancels_the_restore(scenario_host):
    ib = scenario_host("net-ib")
    ib.check_output("/usr/local/sbin/gpulab-network save")
    try:
        ib.check_output("/usr/local/sbin/gpulab-network trial 60")
        assert ib.service("gpulab-network-restore.timer").is_running
        assert ib.check_output("/usr/local/sbin/gpulab-network applied") == "ok"
        assert ib.check_output("/usr/local/sbin/gpulab-network keep") == "kept"
    finally:
        ib.run("systemctl stop gpulab-network-restore.timer")
    assert not ib.service("gpulab-network-restore.timer").is_running
    assert not ib.file("/var/lib/gpulab/network-rolled-back").exists
    # Too late once the restore is not pending: keep says so and fails.
    late = ib.run("/usr/local/sbin/gpulab-network keep")
    assert late.rc == 1 and "too late" in late.stderr
