#!/usr/bin/python
"""Keep slapd's directory holding the cluster's users and groups, its admin password and its TLS files."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ldap_directory
short_description: Keep a local slapd holding the cluster's users, groups, admin password and TLS files
description:
  - Runs on the directory host as root and talks to slapd over its local socket (C(ldapi:///)), to C(cn=config)
    with the root user's own identity (SASL EXTERNAL, as Debian's slapd allows) and to the data as the
    database's admin (C(cn=admin,<base_dn>)).
  - Sets the admin password (C(olcRootPW), an C({SSHA}) hash) and the TLS files in C(cn=config) where they
    differ; adds C(ou=people) and C(ou=groups), each user (C(inetOrgPerson), C(posixAccount),
    C(shadowAccount)) and each group (C(posixGroup)), and replaces the attributes it manages where they
    differ. A disabled user gets C(shadowExpire) 1, which SSSD's shadow expire policy refuses at login.
  - A password is checked by binding with it and set only when the bind fails, so a run that changes
    nothing writes no new hash.
  - Never removes an entry. Users and groups the directory holds that the lists do not name are returned as
    C(unlisted).
  - Fails when slapd holds no database for I(base_dn), naming the suffixes it holds.
version_added: 0.1.0
author: gpulab developers (@gpulab)
requirements: [python-ldap (Debian python3-ldap) on the directory host]
options:
  base_dn:
    description: The suffix of slapd's database (C(dc=gpulab,dc=lan)).
    type: str
    required: true
  root_password:
    description: The admin password of the database (C(cn=admin,<base_dn>)).
    type: str
    required: true
  tls:
    description: Paths on the directory host of the CA certificate, the server certificate and its key.
    type: dict
    required: true
    suboptions:
      ca_file: {description: The CA certificate., type: path, required: true}
      cert_file: {description: The server certificate., type: path, required: true}
      key_file: {description: The server's private key (readable by slapd)., type: path, required: true}
  users:
    description: The users.
    type: list
    elements: dict
    default: []
    suboptions:
      name: {description: Login name., type: str, required: true}
      uid: {description: uidNumber., type: int, required: true}
      group: {description: "The name of the user's primary group, one of I(groups).", type: str, required: true}
      full_name: {description: cn (the login name when not given)., type: str}
      home: {description: Home directory (C(/home/<name>) when not given)., type: str}
      shell: {description: Login shell (C(/bin/bash) when not given)., type: str}
      disabled: {description: Refuse logins (shadowExpire 1)., type: bool, default: false}
      password: {description: The password; none leaves the entry's as it is., type: str}
  groups:
    description: The groups.
    type: list
    elements: dict
    default: []
    suboptions:
      name: {description: Group name., type: str, required: true}
      gid: {description: gidNumber., type: int, required: true}
      members: {description: Login names of the members (memberUid)., type: list, elements: str, default: []}
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: Reads slapd and binds to check passwords; writes nothing.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Two users and a group
  gpulab.cluster.ldap_directory:
    base_dn: dc=gpulab,dc=lan
    root_password: "{{ vault_ldap_admin_password }}"
    tls: {ca_file: /etc/ldap/tls/ca.crt, cert_file: /etc/ldap/tls/server.crt, key_file: /etc/ldap/tls/server.key}
    groups:
      - {name: vision, gid: 20001, members: [alice, bob]}
    users:
      - {name: alice, uid: 20001, group: vision, password: "{{ vault_passwords.alice }}"}
      - {name: bob, uid: 20002, group: vision, disabled: true}
  no_log: false  # the module hides the passwords itself
"""

RETURN = r"""
added:
  description: The entries added (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [ou=people,dc=gpulab,dc=lan, uid=alice,ou=people,dc=gpulab,dc=lan]
modified:
  description: The entries whose managed attributes were replaced, each with the attribute names.
  returned: always
  type: dict
  sample: {uid=bob,ou=people,dc=gpulab,dc=lan: [shadowExpire]}
passwords_set:
  description: The users whose password was set because a bind with it failed.
  returned: always
  type: list
  elements: str
  sample: [alice]
root_password_set:
  description: Whether the admin password was set.
  returned: always
  type: bool
tls_set:
  description: The C(cn=config) TLS settings replaced.
  returned: always
  type: list
  elements: str
  sample: [olcTLSCertificateFile]
unlisted:
  description: Users and groups the directory holds that the lists do not name (never removed).
  returned: always
  type: list
  elements: str
"""

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpulab.cluster.plugins.module_utils import ldap_directory as directory

try:
    import ldap
    import ldap.modlist
except ImportError:
    LDAP_IMPORT_ERROR = traceback.format_exc()
else:
    LDAP_IMPORT_ERROR = None

SOCKET = "ldapi:///"
TLS_ATTRIBUTES = {
    "ca_file": "olcTLSCACertificateFile",
    "cert_file": "olcTLSCertificateFile",
    "key_file": "olcTLSCertificateKeyFile",
}


def decoded(attrs: dict) -> dict[str, list[str]]:
    return {name: [v.decode() for v in values] for name, values in attrs.items()}


def encoded(values: list[str]) -> list[bytes]:
    return [v.encode() for v in values]


def binds(dn: str, password: str) -> bool:
    """Whether a simple bind as dn with password succeeds on slapd's socket."""
    conn = ldap.initialize(SOCKET)
    try:
        conn.simple_bind_s(dn, password)
    except (ldap.INVALID_CREDENTIALS, ldap.NO_SUCH_OBJECT, ldap.UNWILLING_TO_PERFORM):
        return False
    finally:
        conn.unbind_s()
    return True


def run(module: AnsibleModule) -> dict:
    p = module.params
    base_dn = p["base_dn"]
    config = ldap.initialize(SOCKET)
    config.sasl_external_bind_s()
    databases = config.search_s("cn=config", ldap.SCOPE_ONELEVEL, "(olcSuffix=*)", ["olcSuffix", "olcRootDN"])
    database = [
        (dn, decoded(attrs))
        for dn, attrs in databases
        if any(s.decode().lower() == base_dn.lower() for s in attrs["olcSuffix"])
    ]
    if not database:
        held = sorted(suffix.decode() for attrs in dict(databases).values() for suffix in attrs["olcSuffix"])
        module.fail_json(
            msg=f"slapd holds no database for {base_dn} (accounts_base_dn); it holds {', '.join(held) or 'none'}. "
            "Its suffix was chosen when slapd was installed: dpkg-reconfigure slapd, or set accounts_base_dn to it"
        )
    db_dn, db = database[0]
    root_dn = db["olcRootDN"][0]
    result = {"root_password_set": False, "tls_set": [], "added": [], "modified": {}, "passwords_set": []}

    if not binds(root_dn, p["root_password"]):
        result["root_password_set"] = True
        if not module.check_mode:
            config.modify_s(db_dn, [(ldap.MOD_REPLACE, "olcRootPW", [directory.ssha(p["root_password"]).encode()])])

    wanted_tls = {TLS_ATTRIBUTES[key]: path for key, path in p["tls"].items()}
    held_tls = decoded(config.search_s("cn=config", ldap.SCOPE_BASE, attrlist=list(wanted_tls))[0][1])
    tls = directory.config_changes(held_tls, wanted_tls)
    result["tls_set"] = [name for name, _values in tls]
    if tls and not module.check_mode:
        config.modify_s("cn=config", [(ldap.MOD_REPLACE, name, encoded(values)) for name, values in tls])

    # Read with root's own identity (every attribute but passwords is readable); write as the admin.
    held = {dn: decoded(attrs) for dn, attrs in config.search_s(base_dn, ldap.SCOPE_SUBTREE, "(objectClass=*)")}
    config.unbind_s()
    wanted = directory.wanted_entries(base_dn, p["users"], p["groups"])
    steps = directory.plan(held, wanted)
    result["unlisted"] = directory.unlisted(held, wanted, base_dn)
    for dn, action, change in steps:
        if action == "add":
            result["added"].append(dn)
        else:
            result["modified"][dn] = [name for name, _values in change]
    added = {dn.lower() for dn in result["added"]}
    for user in p["users"]:
        dn = directory.user_dn(base_dn, user["name"])
        if user.get("password") and (dn.lower() in added or not binds(dn, user["password"])):
            result["passwords_set"].append(user["name"])

    if not module.check_mode and (steps or result["passwords_set"]):
        admin = ldap.initialize(SOCKET)
        admin.simple_bind_s(root_dn, p["root_password"])
        for dn, action, change in steps:
            if action == "add":
                admin.add_s(dn, ldap.modlist.addModlist({name: encoded(v) for name, v in change.items()}))
            else:
                admin.modify_s(dn, [(ldap.MOD_REPLACE, name, encoded(values) or None) for name, values in change])
        for user in p["users"]:
            if user["name"] in result["passwords_set"]:
                dn = directory.user_dn(base_dn, user["name"])
                admin.modify_s(dn, [(ldap.MOD_REPLACE, "userPassword", [directory.ssha(user["password"]).encode()])])
        admin.unbind_s()
    result["changed"] = bool(result["root_password_set"] or result["tls_set"] or steps or result["passwords_set"])
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            base_dn=dict(type="str", required=True),
            root_password=dict(type="str", required=True, no_log=True),
            tls=dict(
                type="dict",
                required=True,
                options=dict(
                    ca_file=dict(type="path", required=True),
                    cert_file=dict(type="path", required=True),
                    key_file=dict(type="path", required=True),
                ),
            ),
            users=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    name=dict(type="str", required=True),
                    uid=dict(type="int", required=True),
                    group=dict(type="str", required=True),
                    full_name=dict(type="str"),
                    home=dict(type="str"),
                    shell=dict(type="str"),
                    disabled=dict(type="bool", default=False),
                    password=dict(type="str", no_log=True),
                ),
            ),
            groups=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    name=dict(type="str", required=True),
                    gid=dict(type="int", required=True),
                    members=dict(type="list", elements="str", default=[]),
                ),
            ),
        ),
        supports_check_mode=True,
    )
    if LDAP_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("python-ldap (Debian: python3-ldap)"), exception=LDAP_IMPORT_ERROR)
    unknown = sorted({u["group"] for u in module.params["users"]} - {g["name"] for g in module.params["groups"]})
    if unknown:
        module.fail_json(msg=f"users name primary groups that groups does not hold: {', '.join(unknown)}")
    try:
        result = run(module)
    except ldap.LDAPError as exc:
        info = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
        module.fail_json(msg=f"slapd ({SOCKET}): {info.get('desc', exc)} {info.get('info', '')}".strip())
    module.exit_json(**result)


if __name__ == "__main__":
    main()
