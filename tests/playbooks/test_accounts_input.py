"""The accounts role refuses bad settings before it touches a node (no lab needed: the connection points at a
Docker socket that does not exist). The lab inventory enables the role with a directory on mgmt1."""

import pytest
from unreachable import run_playbook

LAB_USERS = [
    {"name": "alice", "uid": 20001, "group": "vision", "slurm_account": "vision"},
    {"name": "bob", "uid": 20002, "group": "nlp"},
]


@pytest.mark.parametrize(
    "extra_vars, message",
    [
        (
            {"accounts_ldap_uri": "ldap://ldap.example.org", "accounts_tls_ca_cert": "/srv/ca.crt"},
            'accounts_ldap_uri must use TLS (ldaps://host), got "ldap://ldap.example.org"',
        ),
        (
            {"accounts_users": [{**LAB_USERS[0], "slurm_account": "visoin"}, LAB_USERS[1]]},
            'accounts_users[alice].slurm_account "visoin" is not one of slurm_accounts (vision, nlp)',
        ),
        ({"accounts_directory_host": "ldap9"}, 'accounts_directory_host "ldap9" is not in the inventory'),
    ],
)
def test_bad_accounts_settings_are_refused_naming_the_variable(extra_vars, message):
    run = run_playbook("playbooks/accounts.yml", extra_vars)
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "Accounts settings:" in output and message in output, output[-3000:]
    assert "Install SSSD" not in output and "Make the directory's CA" not in output  # nothing touched


def test_an_accounts_setting_of_the_wrong_type_is_refused_by_the_role_spec():
    run = run_playbook("playbooks/accounts.yml", {"accounts_users": [{"name": "alice", "uid": "many"}]})
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "accounts_users" in output and "uid" in output and "Install SSSD" not in output, output[-3000:]
