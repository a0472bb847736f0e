"""State the common role leaves on a management node and a compute node."""

import pytest
from polling import wait_for

MGMT_ADDRESS = "172.30.103.11"


def test_base_tools_installed(host):
    for package in ("pciutils", "numactl", "hwloc", "ethtool", "iperf3", "jq", "rsync", "chrony"):
        assert host.package(package).is_installed, package


def test_hosts_lists_every_inventory_host(host):
    hosts = host.file("/etc/hosts").content_string
    assert "172.30.103.11\tcommon-mgmt\n" in hosts
    assert "172.30.103.12\tcommon-gpu\n" in hosts
    assert "# BEGIN gpulab managed: cluster hosts from the inventory" in hosts
    # The name resolves through the file, from both nodes.
    assert host.check_output("getent hosts common-mgmt").split()[0] == MGMT_ADDRESS


def test_chrony_runs_without_touching_the_shared_clock(host):
    assert host.service("chrony").is_running
    assert host.service("chrony").is_enabled
    assert host.file("/etc/default/chrony").contains('^DAEMON_OPTS="-F 1 -x"$')
    assert host.file("/etc/systemd/system/chrony.service.d/gpulab.conf").contains("^ConditionCapability=$")


def test_management_node_serves_time(host):
    if host.backend.get_hostname() != "common-mgmt":
        pytest.skip("management node only")
    conf = host.file("/etc/chrony/chrony.conf").content_string
    assert "allow 172.30.103.0/24" in conf
    assert "local stratum 10" in conf
    assert "pool " not in conf  # common_ntp_upstream is empty in tests: no traffic leaves


def test_compute_node_syncs_from_management_node(host):
    if host.backend.get_hostname() != "common-gpu":
        pytest.skip("compute node only")
    assert f"server {MGMT_ADDRESS} iburst" in host.file("/etc/chrony/chrony.conf").content_string

    # chronyd selects the management node ('^*') once it has a few samples.
    def sources():
        return host.check_output("chronyc -n sources")

    assert wait_for(lambda: f"^* {MGMT_ADDRESS}" in sources(), 90, step=3), (
        f"chrony did not select {MGMT_ADDRESS}:\n{sources()}"
    )


def test_memlock_unlimited_for_logins_and_services(host):
    limits = host.file("/etc/security/limits.d/90-gpulab-memlock.conf").content_string.splitlines()
    assert ["*", "hard", "memlock", "unlimited"] in [line.split() for line in limits]
    # systemd re-read its configuration: services start with the limit lifted. (A login's
    # `ulimit -l` cannot be checked here: the build machines' containers lack CAP_SYS_RESOURCE.)
    assert host.check_output("systemctl show -p DefaultLimitMEMLOCK") == "DefaultLimitMEMLOCK=infinity"


def test_network_sysctl_file(host):
    content = host.file("/etc/sysctl.d/90-gpulab-network.conf").content_string
    assert "net.core.rmem_max = 268435456\n" in content
    assert "net.ipv4.tcp_rmem = 4096 87380 268435456\n" in content
    assert "net.core.netdev_max_backlog = 250000\n" in content
    assert "net.ipv4.tcp_mtu_probing = 1\n" in content


def test_cpu_governor_unit_enabled_and_skipped_without_cpufreq(host):
    unit = host.service("gpulab-cpu-governor")
    assert unit.is_enabled
    assert host.check_output("systemctl show -p ConditionResult gpulab-cpu-governor") == "ConditionResult=no"
    assert host.check_output("systemctl is-failed gpulab-cpu-governor || true") != "failed"


def test_kernel_and_held_packages_stay_out_of_unattended_upgrades(host):
    # apt itself parses the files: the patterns must be in its configuration.
    blacklist = host.check_output("apt-config dump Unattended-Upgrade::Package-Blacklist")
    for pattern in ("^linux-image-", "^linux-headers-", "^linux-modules-", "^jq$", "^rsync$"):
        assert f'"{pattern}";' in blacklist, pattern


def test_a_successful_apt_update_leaves_the_stamp_cache_valid_time_reads(host):
    # The hook is in apt's own configuration, and an update that finds nothing new still touches it.
    assert "update-success-stamp" in host.check_output("apt-config dump APT::Update::Post-Invoke-Success")
    host.check_output("rm -f /var/lib/apt/periodic/update-success-stamp && apt-get update -qq")
    age = host.check_output("echo $(( $(date +%s) - $(stat -c %Y /var/lib/apt/periodic/update-success-stamp) ))")
    assert 0 <= int(age) < 300


def test_hold_packages_holds(host):
    held = host.check_output("apt-mark showhold").split()
    assert held == ["jq", "rsync"]
