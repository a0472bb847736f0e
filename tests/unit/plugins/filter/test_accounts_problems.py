"""The accounts role's settings, refused naming the variable, and the directory's users given to Slurm."""

import pytest

from ansible_collections.gpulab.cluster.plugins.filter.accounts import accounts_problems, accounts_slurm

INVENTORY = ["mgmt1", "gpu1", "gpu2"]
GROUPS = [{"name": "vision", "gid": 20001, "members": ["alice"]}, {"name": "nlp", "gid": 20002, "members": ["bob"]}]
USERS = [
    {"name": "alice", "uid": 20001, "group": "vision", "slurm_account": "vision"},
    {"name": "bob", "uid": 20002, "group": "nlp"},
]
SLURM = [{"name": "vision", "fairshare": 1}, {"name": "nlp", "fairshare": 2, "users": ["root"]}]
GOOD = {
    "server": "mgmt1",
    "uri": "",
    "base_dn": "dc=gpulab,dc=lan",
    "ca_cert": "",
    "server_cert": ["", ""],
    "users": USERS,
    "groups": GROUPS,
    "slurm_accounts": SLURM,
}


def problems(**changes):
    return accounts_problems(INVENTORY, **{**GOOD, **changes})


def test_good_settings_have_no_problem():
    assert problems() == []
    assert problems(uri="ldaps://ldap.example.org", ca_cert="/srv/ca.crt", base_dn="ou=hpc,o=example") == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"uri": "ldap://ldap.example.org", "ca_cert": "/srv/ca.crt"},
            'accounts_ldap_uri must use TLS (ldaps://host), got "ldap://ldap.example.org"',
        ),
        (
            {"uri": "ldaps://ldap.example.org"},
            "accounts_tls_ca_cert must name the CA certificate that signed accounts_ldap_uri's",
        ),
        (
            {"server_cert": ["/srv/ldap.crt", ""]},
            "accounts_tls_cert, accounts_tls_key and accounts_tls_ca_cert go together: give all three or none",
        ),
        ({"server": "mgmt9"}, 'accounts_directory_host "mgmt9" is not in the inventory'),
        ({"server": ""}, "accounts_directory_host is empty and the inventory has no management node to default to"),
        ({"base_dn": "ou=hpc,o=example"}, "accounts_base_dn must be dc= parts only (dc=gpulab,dc=lan)"),
        (
            {"users": [{**USERS[0], "slurm_account": "visoin"}, USERS[1]]},
            'accounts_users[alice].slurm_account "visoin" is not one of slurm_accounts (vision, nlp)',
        ),
        (
            {"groups": [GROUPS[0], {**GROUPS[1], "slurm_account": "speech"}]},
            'accounts_groups[nlp].slurm_account "speech" is not one of slurm_accounts (vision, nlp)',
        ),
        (
            {"users": [{**USERS[0], "group": "staff"}, USERS[1]]},
            'accounts_users[alice].group "staff" is not one of accounts_groups (vision, nlp)',
        ),
        (
            {"groups": [GROUPS[0], {**GROUPS[1], "members": ["bob", "eve"]}]},
            "accounts_groups[nlp].members: not in accounts_users: eve",
        ),
        (
            {"users": [{**USERS[0], "uid": 999}, USERS[1]]},
            "accounts_users[alice].uid must be a whole number of at least 1000, got 999",
        ),
        ({"users": [USERS[0], {**USERS[1], "uid": 20001}]}, "accounts_users[bob].uid 20001 is also alice's"),
        ({"users": [USERS[0], {**USERS[1], "name": "alice"}]}, "accounts_users: alice appears twice"),
        ({"groups": [{**GROUPS[0], "name": "Vision"}, GROUPS[1]]}, 'accounts_groups: "Vision" is no valid name'),
    ],
)
def test_bad_settings_are_named(changes, message):
    found = problems(**changes)
    assert any(message in p for p in found), found


def test_an_existing_directory_needs_no_ids_the_role_would_not_write():
    assert problems(uri="ldaps://ldap.example.org", ca_cert="/srv/ca.crt", users=[{"name": "alice"}], groups=[]) == []


def test_directory_users_join_the_accounts_they_or_their_groups_are_mapped_to():
    groups = [{**GROUPS[1], "members": ["bob", "carol"], "slurm_account": "nlp"}]
    assert accounts_slurm(SLURM, USERS, groups) == [
        {"name": "vision", "fairshare": 1, "users": ["alice"]},
        {"name": "nlp", "fairshare": 2, "users": ["bob", "carol", "root"]},
    ]
    assert accounts_slurm(SLURM, [], []) == SLURM
