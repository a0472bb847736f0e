"""The ups role's settings check: every problem at once, each naming its variable."""

from ansible_collections.gpulab.cluster.plugins.filter.ups import ups_problems, ups_shutdown_command

INVENTORY = ["mgmt1", "storage1", "gpu1", "gpu2"]
GOOD = {
    "host": "mgmt1",
    "password": "s3cret",
    "description": "rack UPS",
    "name": "ups",
    "shutdown_command": "/sbin/shutdown -h +0",
    "drain_nodes": ["gpu1", "gpu2"],
    "listen_port": 3493,
    "gpu_power_limit": 0,
    "storage_nodes": ["storage1"],
    "tier_wait": 60,
}


def test_good_settings_have_no_problem():
    assert ups_problems(INVENTORY, **GOOD) == []
    assert ups_problems(INVENTORY, **{**GOOD, "gpu_power_limit": 200}) == []
    assert ups_problems(INVENTORY, **{**GOOD, "storage_nodes": [], "tier_wait": 0}) == []


def test_every_problem_at_once_each_naming_its_variable():
    bad = {
        "host": "ups-box",
        "password": "two words",
        "description": 'the "big" one',
        "name": "my ups",
        "shutdown_command": 'sh -c "poweroff"',
        "drain_nodes": ["gpu1", "gpu9"],
        "listen_port": 70000,
        "gpu_power_limit": 20,
        "storage_nodes": ["storage1", "ceph9"],
        "tier_wait": -1,
    }
    assert ups_problems(INVENTORY, **bad) == [
        'ups_host "ups-box" is not in the inventory',
        "ups_monitor_password must not hold spaces, quotes, backslashes or # (NUT reads them as syntax)",
        "ups_description must not hold a double quote (ups.conf quotes it)",
        'ups_name "my ups" must be letters, digits, - and _ (a section of ups.conf)',
        "ups_shutdown_command must not hold a double quote (upsmon.conf quotes it)",
        "ups_drain_nodes names hosts that are not in the inventory: gpu9",
        "ups_storage_nodes names hosts that are not in the inventory: ceph9",
        "ups_tier_wait must be 0 (no tiers) to 3600 seconds, got -1",
        "ups_listen_port must be 1-65535, got 70000",
        "ups_gpu_power_limit must be 0 (no cap) or watts from 50 to 2000, got 20",
    ]
    assert ups_problems(INVENTORY, **{**GOOD, "password": ""}) == [
        "ups_monitor_password is empty: set it (from Ansible Vault)"
    ]


def test_a_node_that_waits_gets_the_command_behind_the_tiered_shutdown():
    script = "/usr/local/sbin/gpulab-ups-shutdown"
    waits_for = {"gpu2": "10.0.0.12", "gpu1": "10.0.0.11"}
    assert ups_shutdown_command(waits_for, 60, "/sbin/shutdown -h +0", script) == (
        "/usr/local/sbin/gpulab-ups-shutdown 60 gpu1=10.0.0.11,gpu2=10.0.0.12 -- /sbin/shutdown -h +0"
    )
    # Nothing to wait for (a compute node), or waiting turned off (ups_tier_wait 0): the command alone.
    assert ups_shutdown_command({}, 60, "/sbin/shutdown -h +0", script) == "/sbin/shutdown -h +0"
    assert ups_shutdown_command(waits_for, 0, "/sbin/shutdown -h +0", script) == "/sbin/shutdown -h +0"
