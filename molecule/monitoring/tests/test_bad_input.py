"""Bad monitoring settings are refused before anything is installed, naming the variable."""

import pytest


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("monitoring_gpu_interval=0", "monitoring_gpu_interval must be 1 or more seconds, got 0"),
        ("monitoring_node_exporter_port=http", "monitoring_node_exporter_port"),
        ("monitoring_retention_time=30days", "monitoring_retention_time: not a Prometheus duration"),
        (
            '{"monitoring_scrape_jobs": [{"name": "dcgm", "port": 9400, "hosts": ["mon-gpu1", "gpu9"]}]}',
            "monitoring_scrape_jobs names hosts that are not in the inventory: gpu9",
        ),
        (
            '{"monitoring_ceph_hosts": ["mon-mgmt", "ceph9"]}',
            "monitoring_ceph_hosts names hosts that are not in the inventory: ceph9",
        ),
        ('{"monitoring_alert_receiver": {"type": "webhook"}}', "monitoring_alert_receiver has no address"),
        (
            '{"monitoring_alert_receiver": {"type": "email", "to": "ops@example.org"}}',
            "monitoring_alert_receiver has no address",
        ),
        ('{"monitoring_alert_receiver": {"type": "pager", "url": "http://x"}}', "monitoring_alert_receiver"),
        ('{"monitoring_alert_receiver": {"url": "http://x"}}', "monitoring_alert_receiver needs a type"),
    ],
)
def test_bad_settings_are_refused_naming_the_variable(ansible_playbook, settings, message):
    run = ansible_playbook("playbooks/monitoring.yml", "--limit", "mon-mgmt", "-e", settings)
    assert run.returncode != 0
    assert message in run.stdout, run.stdout[-3000:]
    # Refused before the first change: nothing ran after the checks.
    assert "changed=0" in run.stdout, run.stdout[-3000:]


def test_the_receiver_s_password_never_shows(ansible_playbook, scenario_host):
    secret = "s3cr3t-webhook-pass"
    receiver = f'{{"type": "webhook", "url": "http://127.0.0.1:9199/alerts", "username": "am", "password": "{secret}"}}'
    run = ansible_playbook(
        "playbooks/monitoring.yml", "--limit", "mon-mgmt", "--check", "--diff", "-vvv",
        "-e", f'{{"monitoring_alert_receiver": {receiver}}}',
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    assert secret not in run.stdout
    assert "password_file: /etc/prometheus/gpulab-alert-password" in run.stdout


def test_an_email_receiver_is_written_and_alertmanager_takes_it(ansible_playbook, scenario_host):
    receiver = (
        '{"type": "email", "to": "ops@example.org", "smarthost": "mail.example.org:587",'
        ' "username": "alerts", "password": "mail-secret"}'
    )
    mgmt = scenario_host("mon-mgmt")
    try:
        run = ansible_playbook(
            "playbooks/monitoring.yml", "--limit", "mon-mgmt", "-e", f'{{"monitoring_alert_receiver": {receiver}}}'
        )
        assert run.returncode == 0, run.stdout[-3000:]
        assert "mail-secret" not in run.stdout
        config = mgmt.file("/etc/prometheus/alertmanager.yml").content_string
        for line in ('- to: "ops@example.org"', 'smarthost: "mail.example.org:587"', 'auth_username: "alerts"',
                     "auth_password_file: /etc/prometheus/gpulab-alert-password"):  # fmt: skip
            assert line in config, config
        assert mgmt.file("/etc/prometheus/gpulab-alert-password").content_string == "mail-secret"
        assert mgmt.service("prometheus-alertmanager").is_running
    finally:
        # Back to the scenario's webhook, which the other tests use.
        back = ansible_playbook("playbooks/monitoring.yml", "--limit", "mon-mgmt")
        assert back.returncode == 0, back.stdout[-3000:]
