"""The directory the accounts role keeps: its entries, and the changes to entries as slapd holds them (the
held entries are as python-ldap returned them from the lab's slapd, decoded)."""

import base64
import hashlib

from ansible_collections.gpulab.cluster.plugins.module_utils import ldap_directory as directory

BASE = "dc=gpulab,dc=lan"
USERS = [
    {"name": "alice", "uid": 20001, "group": "vision"},
    {"name": "carol", "uid": 20003, "group": "nlp", "full_name": "Carol Lab", "disabled": True, "shell": "/bin/zsh"},
]
GROUPS = [{"name": "vision", "gid": 20001, "members": ["alice"]}, {"name": "nlp", "gid": 20002, "members": ["carol"]}]
# As slapd returned alice after the role added her, with the operational attributes a search gives none of.
HELD_ALICE = {
    "objectClass": ["inetOrgPerson", "posixAccount", "shadowAccount"],
    "uid": ["alice"],
    "cn": ["alice"],
    "sn": ["alice"],
    "uidNumber": ["20001"],
    "gidNumber": ["20001"],
    "homeDirectory": ["/home/alice"],
    "loginShell": ["/bin/bash"],
    "userPassword": ["{SSHA}kZ9XU0sS3n2i5u7QkZfrkH2mYm1oMTIzNDU2Nzg="],
    "mail": ["alice@example.org"],
}


def wanted():
    return directory.wanted_entries(BASE, USERS, GROUPS)


def test_the_entries_hold_each_user_with_the_gid_of_her_group_and_each_group_with_its_members():
    entries = wanted()
    assert list(entries) == [
        "ou=people,dc=gpulab,dc=lan",
        "ou=groups,dc=gpulab,dc=lan",
        "uid=alice,ou=people,dc=gpulab,dc=lan",
        "uid=carol,ou=people,dc=gpulab,dc=lan",
        "cn=vision,ou=groups,dc=gpulab,dc=lan",
        "cn=nlp,ou=groups,dc=gpulab,dc=lan",
    ]
    kind, carol = entries["uid=carol,ou=people,dc=gpulab,dc=lan"]
    assert kind == "user"
    assert carol["cn"] == ["Carol Lab"] and carol["sn"] == ["Lab"]
    assert carol["uidNumber"] == ["20003"] and carol["gidNumber"] == ["20002"]
    assert carol["homeDirectory"] == ["/home/carol"] and carol["loginShell"] == ["/bin/zsh"]
    assert carol["shadowExpire"] == ["1"]  # disabled
    assert entries["uid=alice,ou=people,dc=gpulab,dc=lan"][1]["shadowExpire"] == []
    assert entries["cn=nlp,ou=groups,dc=gpulab,dc=lan"][1] == {
        "objectClass": ["posixGroup"],
        "cn": ["nlp"],
        "gidNumber": ["20002"],
        "memberUid": ["carol"],
    }


def test_an_empty_directory_gets_every_entry_added_parents_first_without_empty_attributes():
    steps = directory.plan({}, wanted())
    assert [(step[0].split(",")[0], step[1]) for step in steps] == [
        ("ou=people", "add"),
        ("ou=groups", "add"),
        ("uid=alice", "add"),
        ("uid=carol", "add"),
        ("cn=vision", "add"),
        ("cn=nlp", "add"),
    ]
    alice = steps[2][2]
    assert "shadowExpire" not in alice and alice["uidNumber"] == ["20001"]


def test_a_directory_that_matches_needs_nothing_and_other_attributes_are_left_alone():
    held = {dn: {name: values for name, values in entry[1].items() if values} for dn, entry in wanted().items()}
    held["uid=alice,ou=people,dc=gpulab,dc=lan"] = HELD_ALICE
    assert directory.plan(held, wanted()) == []


def test_changed_attributes_are_replaced_names_and_dns_compared_without_case():
    held_alice = {**HELD_ALICE, "loginshell": ["/bin/sh"], "objectClass": ["inetOrgPerson", "posixAccount"]}
    del held_alice["loginShell"]
    held = {"UID=alice,OU=people,DC=gpulab,DC=lan": held_alice}
    steps = {dn: (action, change) for dn, action, change in directory.plan(held, wanted())}
    action, change = steps["uid=alice,ou=people,dc=gpulab,dc=lan"]
    assert action == "modify"
    assert change == [
        ("objectClass", ["inetOrgPerson", "posixAccount", "shadowAccount"]),
        ("loginShell", ["/bin/bash"]),
    ]


def test_disabling_sets_shadow_expire_and_enabling_again_deletes_it():
    carol = wanted()["uid=carol,ou=people,dc=gpulab,dc=lan"][1]
    held_carol = {name: values for name, values in carol.items() if values}
    enabled = [{**USERS[1], "disabled": False}]
    entries = directory.wanted_entries(BASE, enabled, GROUPS)
    assert directory.modifications("user", held_carol, entries["uid=carol,ou=people,dc=gpulab,dc=lan"][1]) == [
        ("shadowExpire", [])
    ]


def test_objectclasses_of_the_operators_own_are_kept():
    held = {**HELD_ALICE, "objectClass": ["inetOrgPerson", "posixAccount", "shadowAccount", "ldapPublicKey"]}
    assert directory.modifications("user", held, wanted()["uid=alice,ou=people,dc=gpulab,dc=lan"][1]) == []


def test_users_and_groups_the_lists_do_not_name_are_reported_not_removed():
    held = {
        "dc=gpulab,dc=lan": {},
        "ou=people,dc=gpulab,dc=lan": {},
        "uid=alice,ou=people,dc=gpulab,dc=lan": HELD_ALICE,
        "uid=dave,ou=people,dc=gpulab,dc=lan": {},
        "cn=old,ou=groups,dc=gpulab,dc=lan": {},
        "cn=admin,dc=gpulab,dc=lan": {},
    }
    assert directory.unlisted(held, wanted(), BASE) == [
        "cn=old,ou=groups,dc=gpulab,dc=lan",
        "uid=dave,ou=people,dc=gpulab,dc=lan",
    ]
    assert all(step[1] != "delete" for step in directory.plan(held, wanted()))


def test_ssha_is_the_salted_sha1_slapd_checks():
    hashed = directory.ssha("lab-alice-secret", salt=b"12345678")
    raw = base64.b64decode(hashed.removeprefix("{SSHA}"))
    assert hashed.startswith("{SSHA}") and raw[20:] == b"12345678"
    assert raw[:20] == hashlib.sha1(b"lab-alice-secret12345678").digest()
    assert directory.ssha("x") != directory.ssha("x")  # a fresh salt each time


def test_config_changes_replace_only_the_tls_settings_that_differ():
    held = {"olcTLSCACertificateFile": ["/etc/ldap/tls/ca.crt"], "olctlscertificatefile": ["/etc/old.crt"]}
    wanted_tls = {
        "olcTLSCACertificateFile": "/etc/ldap/tls/ca.crt",
        "olcTLSCertificateFile": "/etc/ldap/tls/server.crt",
        "olcTLSCertificateKeyFile": "/etc/ldap/tls/server.key",
    }
    assert directory.config_changes(held, wanted_tls) == [
        ("olcTLSCertificateFile", ["/etc/ldap/tls/server.crt"]),
        ("olcTLSCertificateKeyFile", ["/etc/ldap/tls/server.key"]),
    ]
