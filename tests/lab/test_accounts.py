"""Central accounts in the lab (inventory/lab: accounts_enabled): slapd on mgmt1 with alice, bob and carol
(disabled) in the groups vision and nlp, SSSD on every node, alice mapped to the Slurm account vision and the
group nlp to nlp."""

import json
import re
import shlex
import subprocess

import pytest
import yaml
from helpers import ROOT, on, playbook, wait_for

NODES = ("mgmt1", "gpu1", "gpu2", "storage1")
PASSWORDS = {"alice": "lab-alice-secret", "bob": "lab-bob-secret", "carol": "lab-carol-secret"}
NEW_BOB = "lab-bob-changed"
# Runs as nobody on a node: `su - USER` through PAM on a terminal, the password typed at its prompt; prints
# what the terminal showed and exits with su's status.
LOGIN = r"""
import os, pty, signal, sys
user, password = sys.argv[1], sys.argv[2]
signal.alarm(60)
pid, fd = pty.fork()
if pid == 0:
    os.execvp("su", ["su", "-", user, "-c", "echo logged in as $(id -un) in $(pwd)"])
shown, typed = b"", False
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    shown += chunk
    if not typed and b"assword" in shown:
        os.write(fd, password.encode() + b"\n")
        typed = True
print(shown.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def login(node, user, password):
    command = ["docker", "exec", "-u", "nobody", node, "python3", "-c", LOGIN, user, password]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)


@pytest.mark.parametrize("node", NODES)
def test_the_directorys_users_and_groups_resolve_with_its_ids_on_every_node(node):
    users = on(node, "getent passwd alice bob carol").splitlines()
    assert users == [
        "alice:*:20001:20001:alice:/home/alice:/bin/bash",
        "bob:*:20002:20002:Bob Lab:/home/bob:/bin/bash",
        "carol:*:20003:20002:carol:/home/carol:/bin/bash",
    ]
    assert on(node, "getent group vision nlp").splitlines() == ["vision:*:20001:alice", "nlp:*:20002:bob,carol"]
    assert on(node, "id -nG bob") == "nlp"
    # The sssd service runs the NSS and PAM responders; their socket units, which would refuse to, are off.
    sockets = "sssd-nss.socket sssd-pam.socket sssd-pam-priv.socket"
    assert on(node, f"systemctl is-failed {sockets} || :").split() == ["inactive"] * 3
    assert on(node, f"systemctl is-enabled {sockets} || :").split() == ["disabled"] * 3


def test_the_directory_answers_on_ldaps_with_the_roles_ca_and_not_on_plain_ldap():
    address = on("gpu1", "getent hosts mgmt1").split()[0]
    tls = f"""
import socket, ssl
context = ssl.create_default_context(cafile="/etc/gpulab/accounts/ca.crt")
with socket.create_connection(("{address}", 636), timeout=10) as raw:
    with context.wrap_socket(raw, server_hostname="{address}") as tls:
        print(tls.version())
"""
    assert on("gpu1", f"python3 -c {shlex.quote(tls)}") == "TLSv1.3"
    # On mgmt1 itself (loopback, which the firewall leaves alone): nothing listens on 389.
    plain = f"""
import socket
try:
    socket.create_connection(("{address}", 389), timeout=10)
    print("plain ldap answers")
except ConnectionRefusedError:
    print("plain ldap refused")
"""
    assert on("mgmt1", f"python3 -c {shlex.quote(plain)}") == "plain ldap refused"


def test_a_login_through_pam_works_with_the_password_and_creates_the_home_directory():
    on("gpu2", "rm -rf /home/alice")
    run = login("gpu2", "alice", PASSWORDS["alice"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert "logged in as alice in /home/alice" in run.stdout
    assert on("gpu2", "stat -c '%u:%g %F' /home/alice") == "20001:20001 directory"


@pytest.mark.parametrize(
    ("user", "password", "refusal"),
    [
        ("alice", "not-" + PASSWORDS["alice"], "su: Authentication failure"),
        # The right password: the directory's shadowExpire refuses her at PAM's account step.
        ("carol", PASSWORDS["carol"], "su: User account has expired"),
    ],
    ids=["wrong", "disabled"],
)
def test_a_wrong_password_and_a_disabled_user_are_refused(user, password, refusal):
    run = login("gpu1", user, password)
    assert run.returncode != 0, run.stdout
    assert refusal in run.stdout and "logged in as" not in run.stdout, run.stdout


def test_a_user_disabled_with_a_new_password_is_refused_at_once_and_vvv_shows_no_password():
    lab = ROOT / "inventory" / "lab" / "group_vars" / "all" / "lab.yml"
    users = yaml.safe_load(lab.read_text())["accounts_users"]
    changed = [{**user, "disabled": True, "password": NEW_BOB} if user["name"] == "bob" else user for user in users]
    try:
        run = playbook("playbooks/accounts.yml", "-vvv", "-e", json.dumps({"accounts_users": changed}))
        output = run.stdout + run.stderr
        assert run.returncode == 0, output[-3000:]
        assert re.search(r'"passwords_set": \[\s*"bob"\s*\]', output), output[-3000:]
        assert "Forget the users and groups SSSD cached" in output
        # The module's arguments shown, the passwords censored; no password anywhere in the output.
        assert '"root_password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' in output
        admin = (ROOT / "inventory" / "credentials" / "lab" / "ldap_admin_password").read_text().split()[0]
        secrets = {**PASSWORDS, "bob (new)": NEW_BOB, "admin": admin}
        assert [name for name, secret in secrets.items() if secret in output] == []
        assert "su: User account has expired" in login("gpu2", "bob", NEW_BOB).stdout
    finally:
        run = playbook("playbooks/accounts.yml")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "logged in as bob" in login("gpu2", "bob", PASSWORDS["bob"]).stdout
    assert "su: Authentication failure" in login("gpu2", "bob", NEW_BOB).stdout


def test_a_job_of_a_directory_user_runs_as_her_on_two_nodes_under_her_slurm_account():
    ran = on("gpu1", "runuser -u alice -- srun -N2 --chdir=/tmp sh -c 'echo $(hostname) $(id -un)'", timeout=120)
    assert sorted(ran.splitlines()) == ["gpu1 alice", "gpu2 alice"]
    record = wait_for(lambda: on("gpu1", "sacct -u alice -X -n -P -o User,Account,State,NNodes | tail -n 1"), 30)
    assert record == "alice|vision|COMPLETED|2"
    # bob and carol through their group's mapping
    associations = on("mgmt1", "sacctmgr -n -P show association users=bob,carol format=User,Account")
    assert sorted(associations.splitlines()) == ["bob|nlp", "carol|nlp"]
