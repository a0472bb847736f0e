"""The ups role (and the monitoring role's UPS collector) refuse bad settings before they touch a node
(no lab needed: the connection points at a Docker socket that does not exist)."""

import pytest
from unreachable import run_playbook


def monitoring(tags, extra_vars, *options):
    run = run_playbook("playbooks/monitoring.yml", extra_vars, "--tags", tags, *options)
    return run.returncode, run.stdout + run.stderr


UNQUOTABLE = "ups_monitor_password must not hold spaces, quotes, backslashes or #"


@pytest.mark.parametrize(
    "extra_vars, message",
    [
        ({"ups_monitor_password": ""}, "ups_monitor_password is empty: set it (from Ansible Vault)"),
        ({"ups_monitor_password": "two words"}, UNQUOTABLE),
        ({"ups_monitor_password": "back\\slash"}, UNQUOTABLE),
        ({"ups_monitor_password": "hash#tag"}, UNQUOTABLE),
        ({"ups_description": 'the "big" one'}, "ups_description must not hold a double quote"),
        ({"ups_host": "ups-box"}, 'ups_host "ups-box" is not in the inventory'),
        ({"ups_drain_nodes": ["gpu1", "gpu9"]}, "ups_drain_nodes names hosts that are not in the inventory: gpu9"),
        ({"ups_name": "my ups"}, 'ups_name "my ups" must be letters, digits, - and _'),
        ({"ups_shutdown_command": 'sh -c "poweroff"'}, "ups_shutdown_command must not hold a double quote"),
        ({"ups_listen_port": 70000}, "ups_listen_port must be 1-65535, got 70000"),
        ({"ups_gpu_power_limit": 20}, "ups_gpu_power_limit must be 0 (no cap) or watts from 50 to 2000, got 20"),
        ({"ups_storage_nodes": ["ceph9"]}, "ups_storage_nodes names hosts that are not in the inventory: ceph9"),
        ({"ups_tier_wait": 7200}, "ups_tier_wait must be 0 (no tiers) to 3600 seconds, got 7200"),
    ],
)
def test_bad_ups_settings_are_refused_naming_the_variable(extra_vars, message):
    rc, output = monitoring("ups", extra_vars)
    assert rc != 0
    assert "UPS settings:" in output and message in output, output[-3000:]
    assert "Install NUT" not in output  # stopped before any node was touched
    for password in ("two words", "back\\slash", "hash#tag"):  # nor is the password shown
        assert password not in output


def test_a_ups_setting_of_the_wrong_type_is_refused_by_the_role_spec():
    for name in ("ups_host_sync", "ups_tier_wait"):
        rc, output = monitoring("ups", {name: "soon"})
        assert rc != 0
        assert name in output and "Install NUT" not in output, output[-3000:]
    # A signal the spec does not offer (KILL would end every job at the first power blip).
    rc, output = monitoring("ups", {"ups_job_signal": "KILL"})
    assert rc != 0
    assert "value of ups_job_signal must be one of" in output and "Install NUT" not in output, output[-3000:]


def test_a_ups_target_upsc_cannot_name_is_refused():
    # Only the UPS host runs the UPS collector.
    rc, output = monitoring("monitoring", {"monitoring_ups_target": "ups"}, "--limit", "mgmt1")
    assert rc != 0
    assert "monitoring_ups_target must be UPS@HOST[:PORT], got 'ups'" in output, output[-3000:]
    assert "Install node exporter" not in output
