"""Bad monitoring settings are refused before anything is installed, naming the variable."""

import pytest


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("monitoring_gpu_interval=0", "monitoring_gpu_interval must be 1 or more seconds, got 0"),
        ("monitoring_node_exporter_port=http", "monitoring_node_exporter_port"),
    ],
)
def test_bad_settings_are_refused_naming_the_variable(ansible_playbook, settings, message):
    run = ansible_playbook("playbooks/monitoring.yml", "--limit", "mon-gpu2", "-e", settings)
    assert run.returncode != 0
    assert message in run.stdout, run.stdout[-3000:]
