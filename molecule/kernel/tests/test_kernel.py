"""What needs a kernel: VLANs at MTU 9000, Soft-RoCE, LUKS through crypttab (by key file, and by
Clevis and Tang), the management link taken over with a rollback (and undone when it cuts SSH off),
all of it after a reboot, and a boot that goes on without Tang.

pytest runs the tests that take a VM (`vm`, module-scoped) one VM at a time: kvm1's first look, then the reboot of
both VMs (with kvm1's after-reboot test), then kvm2's first look and after-reboot test; then the others in file
order: the rollback, ib_write_bw, and kvm1's boot without Tang.
"""

import json
import re
import time

import pytest
from polling import wait_for

VMS = {"kvm1": 1, "kvm2": 2}
VLANS = {"compute": (20, "10.20.0", "eth1"), "storage": (30, "10.30.0", "bond0")}
RXE = "rxe_eth1"
TANG_CLIENT, TANG_SERVER = "kvm1", "kvm2"


def peer(name):
    return next(other for other in VMS if other != name)


def address(name, traffic_class):
    return f"{VLANS[traffic_class][1]}.{10 + VMS[name]}"


@pytest.fixture(scope="module", params=list(VMS))
def vm(request, vm_host):
    return request.param, vm_host(request.param)


def check_vlans(name, host):
    links = {link["ifname"]: link for link in json.loads(host.check_output("ip -json -details address show"))}
    for traffic_class, (vlan_id, _address, parent) in VLANS.items():
        assert links[parent]["mtu"] == 9000
        link = links[f"{parent}.{vlan_id}"]
        assert link["linkinfo"]["info_kind"] == "vlan"
        assert link["linkinfo"]["info_data"]["id"] == vlan_id
        assert link["link"] == parent
        assert link["mtu"] == 9000
        assert link["operstate"] == "UP"
        assert [(a["local"], a["prefixlen"]) for a in link["addr_info"] if a["family"] == "inet"] == [
            (address(name, traffic_class), 24)
        ]


def check_bond(host):
    """bond0: LACP up on both members, each agreeing with the other VM's bond (partner MAC set)."""
    state = host.file("/proc/net/bonding/bond0").content_string
    assert "Bonding Mode: IEEE 802.3ad Dynamic link aggregation" in state
    members = re.findall(r"^Slave Interface: (\S+)\nMII Status: (\S+)", state, re.M)
    assert sorted(members) == [("eth2", "up"), ("eth3", "up")]
    partner = re.search(r"^\s*Partner Mac Address: (\S+)", state, re.M)
    assert partner and partner.group(1) != "00:00:00:00:00:00", state
    for nic in ("eth2", "eth3"):
        assert host.file(f"/sys/class/net/{nic}/master").linked_to == "/sys/devices/virtual/net/bond0"
        assert host.file(f"/sys/class/net/{nic}/mtu").content_string.strip() == "9000"


def check_full_mtu_pings(name, host):
    for traffic_class in VLANS:
        target = address(peer(name), traffic_class)
        # 8972 bytes of ICMP payload + 28 of headers = 9000, with do-not-fragment.
        ping = host.run(f"ping -c 2 -W 3 -M do -s 8972 {target}")
        assert ping.rc == 0, ping.stdout + ping.stderr
        assert "2 received" in ping.stdout
        # One byte more does not fit the MTU: the kernel refuses to send it unfragmented.
        too_big = host.run(f"ping -c 1 -W 3 -M do -s 8973 {target}")
        assert too_big.rc != 0
        assert "message too long" in (too_big.stdout + too_big.stderr).lower()


def check_soft_roce(name, host, ansible_host):
    """rdma_health is a module: it runs through Ansible (`ansible_host`), the rest over SSH."""
    result = ansible_host.ansible(
        "gpulab.cluster.rdma_health", "fabric=roce netdev=eth1.20 check_qos=false", check=False, become=False
    )
    assert result.get("failed") is not True, result
    ports = result["ports"]
    assert [(p["device"], p["port"], p["state"], p["link_layer"], p["netdev"]) for p in ports] == [
        (RXE, 1, "ACTIVE", "Ethernet", "eth1")
    ]
    gid = next(check for check in result["checks"] if check["check"] == "roce_v2_gid")
    assert gid["status"] == "pass"
    assert f"({address(name, 'compute')} on eth1.20)" in gid["message"]
    assert result["gid_index"] == gid["value"]
    # RDMA-CM's defaults from the gpulab-rdma-qos unit: RoCE v2, ToS = DSCP 26 << 2 | ECT(0).
    cm = f"/sys/kernel/config/rdma_cm/{RXE}/ports/1"
    assert host.file(f"{cm}/default_roce_mode").content_string.strip() == "RoCE v2"
    assert host.file(f"{cm}/default_roce_tos").content_string.strip() == "106"
    assert host.service("gpulab-rdma-qos").is_enabled


def check_management(name, host):
    """eth0 from gpulab's file (sorting before the image's DHCP one): static address, route, no lease."""
    status = host.check_output("networkctl status eth0 --no-pager")
    assert "Network File: /etc/systemd/network/05-gpulab-eth0.network" in status, status
    (link,) = json.loads(host.check_output("ip -json address show dev eth0"))
    inet = [a for a in link["addr_info"] if a["family"] == "inet"]
    assert [(a["local"], a["prefixlen"]) for a in inet] == [(f"10.0.2.{10 + VMS[name]}", 24)]
    assert not inet[0].get("dynamic"), inet  # not a DHCP lease
    routes = json.loads(host.check_output("ip -json route show default"))
    assert [(r["gateway"], r["dev"], r["protocol"]) for r in routes] == [("10.0.2.2", "eth0", "static")]
    assert not host.service("gpulab-network-restore.timer").is_running


def check_boot_config(name, host):
    """kvm1 opens data0 through Tang (no key on the node, nofail); kvm2 with its key file."""
    if name == TANG_CLIENT:
        key, options = "none", "luks,discard,_netdev,nofail,timeout=60s"
        mount_options = "defaults,noatime,_netdev,nofail"
    else:
        key, options = "/etc/gpulab/luks/data0.key", "luks,discard"
        mount_options = "defaults,noatime"
    crypttab = host.file("/etc/crypttab").content_string
    assert re.search(rf"^data0 UUID=[0-9a-f-]{{36}} {key} {options}$", crypttab, re.M), crypttab
    fstab = host.file("/etc/fstab").content_string
    assert re.search(rf"^/dev/mapper/data0\s+/scratch\s+ext4\s+{mount_options}\s", fstab, re.M), fstab
    key_file = host.file("/etc/gpulab/luks/data0.key")
    if name == TANG_CLIENT:
        assert not key_file.exists
        assert host.service("clevis-luks-askpass.path").is_enabled
        assert host.service("remote-cryptsetup.target").is_enabled  # off in Debian unless enabled
        bindings = host.check_output("clevis luks list -d /dev/vdb")
        assert f'"url":"http://{address(TANG_SERVER, "compute")}:7500"' in bindings, bindings
    else:
        assert key_file.mode == 0o400


def check_scratch(host):
    status = host.run("cryptsetup status data0")
    assert status.rc == 0, status.stderr
    assert re.search(r"type:\s+LUKS2", status.stdout)
    assert re.search(r"device:\s+/dev/vdb", status.stdout)
    mount = json.loads(host.check_output("findmnt -J -o SOURCE,FSTYPE /scratch"))["filesystems"][0]
    assert mount == {"source": "/dev/mapper/data0", "fstype": "ext4"}


def test_management_link_was_taken_over_and_kept(vm):
    check_management(*vm)
    assert not vm[1].file("/var/lib/gpulab/network-rolled-back").exists


def test_a_management_change_that_cuts_ssh_is_rolled_back(vm_host, ansible_playbook):
    """kvm2 told to take 10.0.2.99: QEMU forwards SSH to 10.0.2.12 only, so the change cuts Ansible
    off; the node must restore its settings by itself and the run must say so."""
    host = vm_host("kvm2")
    run = ansible_playbook(
        "playbooks/network.yml",
        "--limit",
        "kvm2",
        "--tags",
        "network",
        "-e",
        # The shortest rollback: this change is meant to fail.
        json.dumps({"gpulab_address": "10.0.2.99", "network_rollback_seconds": 40}),
        timeout=600,  # the role under emulation, then the wait for the node's own restore
    )
    assert run.returncode != 0, run.stdout[-3000:]
    print(next(line.strip() for line in run.stdout.splitlines() if "did not keep a working connection" in line))
    assert "the management change (10.0.2.99/24 on eth0 via 10.0.2.2) did not keep a working connection" in run.stdout
    assert "The node put back its settings from before this run" in run.stdout, run.stdout[-3000:]
    assert "restored gpulab's network files from before the last change" in run.stdout
    assert "Address=10.0.2.12/24\n" in host.file("/etc/systemd/network/05-gpulab-eth0.network").content_string
    assert "restored gpulab's network files" in host.check_output("journalctl -t gpulab-network --no-pager")
    check_management("kvm2", host)
    check_vlans("kvm2", host)


def test_vlans_have_the_plans_ids_addresses_and_mtu(vm):
    check_vlans(*vm)


def test_bond_runs_lacp_with_the_other_vm(vm):
    check_bond(vm[1])


def test_full_mtu_passes_unfragmented_on_every_vlan(vm):
    check_full_mtu_pings(*vm)


def test_soft_roce_port_is_active_with_a_roce_v2_gid_on_the_compute_vlan(vm, scenario_host):
    check_soft_roce(*vm, scenario_host(vm[0]))


def test_luks_disk_is_open_and_mounted(vm):
    check_boot_config(*vm)
    check_scratch(vm[1])


# perftest's two ways of saying the server did not listen yet.
REJECTED = r"Unexpected CM event .* 8$|RDMA_CM_EVENT_REJECTED; error: 8\."


def ib_write_bw(server, client):
    """One ib_write_bw run over RDMA-CM between the VMs: the client's result."""
    # The server's own bound is long enough for a client that is slow to start under emulation.
    server.check_output(f"systemd-run --unit gpulab-test-bw timeout 300 ib_write_bw -d {RXE} -R -D 3")
    try:
        # The server listens a moment after systemd-run returns (its rdma_cm ID in state LISTEN: awaited, at
        # most 120 s); a client that comes first anyway is rejected (RDMA CM event 8, REJECTED) and asks
        # again, for at most 60 s. ib_write_bw then exits 255, which testinfra takes for a failed ssh: the
        # status is passed on as 254.
        listening = "rdma resource show cm_id | grep -q 'state LISTEN' && echo listening || true"
        wait_for(lambda: server.check_output(listening) == "listening", 120, step=1)
        bw = f"timeout 90 ib_write_bw -d {RXE} -R -D 3 --report_gbits {address('kvm1', 'compute')}"
        deadline = time.monotonic() + 60
        while True:
            run = client.run(f"{bw}; rc=$?; exit $((rc == 255 ? 254 : rc))")
            if run.rc == 0 or not re.search(REJECTED, run.stderr, re.M):
                return run
            if time.monotonic() > deadline:
                return run
            time.sleep(1)
    finally:
        server.run("systemctl stop gpulab-test-bw; systemctl reset-failed gpulab-test-bw")


def test_ib_write_bw_over_rdma_cm_completes(vm_host):
    server, client = vm_host("kvm1"), vm_host("kvm2")
    run = ib_write_bw(server, client)
    if run.rc == 124:
        # Once in a CI run (2026-12-05) the client printed nothing for 90 s beside the other lane's load: Soft-RoCE
        # under TCG emulation can lose its connection setup. One more run, with a new server, tells that apart
        # from a path that does not work, which fails both.
        print(f"ib_write_bw: the first client run timed out (stderr: {run.stderr.strip()[-300:]!r}); run again")
        run = ib_write_bw(server, client)
    assert run.rc == 0, run.stdout + run.stderr
    assert "rdma_cm QPs\t : ON" in run.stdout
    # "#bytes #iterations BW peak BW average MsgRate": emulated, so reported, not judged.
    row = re.search(r"^\s*65536\s+\d+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s*$", run.stdout, re.M)
    assert row, run.stdout
    assert float(row.group(1)) > 0
    print(f"ib_write_bw kvm2 -> kvm1 over Soft-RoCE: {row.group(1)} Gb/s average")


REBOOT_DECISION = "{}: reboot: /run/reboot-required exists (a package asked for a reboot)"


def reboot(ansible_playbook, vm_host, *limit):
    """Reboot through upgrade.yml's plan and apply steps (reboot.yml); check that it was a new boot."""
    names = limit or VMS
    boots = {name: vm_host(name).file("/proc/sys/kernel/random/boot_id").content_string for name in names}
    # A bound for a hung reboot, not an expected time: a reboot of both TCG VMs took up to 300 s with
    # the other lane's scenarios on the same two cores.
    run = ansible_playbook(
        "molecule/kernel/reboot.yml", "--tags", "reboot", *(("--limit", *limit) if limit else ()), timeout=900
    )
    assert run.returncode == 0, run.stdout[-3000:]
    for name in names:
        assert REBOOT_DECISION.format(name) in run.stdout, run.stdout[-3000:]
        host = vm_host(name)
        assert host.file("/proc/sys/kernel/random/boot_id").content_string != boots[name]
        assert not host.file("/run/reboot-required").exists  # the upgrade would not reboot it again


@pytest.fixture(scope="module")
def rebooted(vm_host, ansible_playbook):
    """Write a file on each scratch disk, reboot both VMs, and hand back what was written."""
    written = {}
    for name in VMS:
        host = vm_host(name)
        host.check_output("head -c 4M /dev/urandom > /scratch/before-reboot && sync")
        written[name] = host.check_output("sha256sum /scratch/before-reboot").split()[0]
    reboot(ansible_playbook, vm_host)
    return written


def test_after_a_reboot_everything_is_back(rebooted, vm, scenario_host):
    name, host = vm
    # Nothing from Ansible since the reboot: systemd-networkd, gpulab-rdma-qos and crypttab did it.
    assert host.service("gpulab-rdma-qos").is_running  # oneshot, RemainAfterExit: active once it succeeded
    assert host.service("systemd-cryptsetup@data0").is_running
    check_management(name, host)
    check_vlans(name, host)
    check_bond(host)
    check_full_mtu_pings(name, host)
    check_soft_roce(name, host, scenario_host(name))
    check_boot_config(name, host)
    check_scratch(host)
    assert host.check_output("sha256sum /scratch/before-reboot").split()[0] == rebooted[name]
    if name == TANG_CLIENT:
        assert clevis_unlocked(host)


def clevis_unlocked(host):
    """Clevis's own word, in this boot's journal, that it answered the disk's passphrase query."""
    log = host.check_output("journalctl -b -u clevis-luks-askpass --no-pager -o cat")
    return re.search(r"^Unlocked \S+ \(UUID=[0-9a-f-]{36}\) successfully$", log, re.M) is not None


@pytest.fixture(scope="module")
def booted_without_tang(rebooted, vm_host, ansible_playbook):
    """kvm1 rebooted while kvm2's Tang is stopped; Tang comes back once kvm1's boot has finished."""
    tang = vm_host(TANG_SERVER)
    tang.check_output("systemctl stop tangd.socket")
    try:
        started = time.monotonic()
        reboot(ansible_playbook, vm_host, TANG_CLIENT)
        took = time.monotonic() - started
    finally:
        tang.check_output("systemctl start tangd.socket")
    print(f"{TANG_CLIENT} rebooted without Tang: boot finished {took:.0f} s after the reboot began")
    return took


def test_without_tang_the_boot_finishes_with_the_disk_closed(booted_without_tang, vm_host):
    host = vm_host(TANG_CLIENT)
    # A bound for a boot that waits for a passphrase forever, not a time to meet: the unlock timeout (60 s) plus a
    # boot under emulation, which took 389 s once with the other lane's load on both cores.
    assert booted_without_tang < 600
    assert host.run("systemctl is-failed systemd-cryptsetup@data0").stdout.strip() == "failed"
    assert host.run("cryptsetup status data0").rc != 0
    assert host.run("findmnt /scratch").rc == 1
    assert host.run("systemctl is-system-running").stdout.strip() == "degraded"
    assert not clevis_unlocked(host)


def test_once_tang_answers_again_the_disk_opens_without_a_key(booted_without_tang, rebooted, vm_host):
    host = vm_host(TANG_CLIENT)
    host.check_output("systemctl restart systemd-cryptsetup@data0 && systemctl start scratch.mount")
    check_scratch(host)
    assert clevis_unlocked(host)
    assert host.check_output("sha256sum /scratch/before-reboot").split()[0] == rebooted[TANG_CLIENT]
