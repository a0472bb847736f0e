"""file_status: the files action's shell read, run for real in /bin/sh on this machine's files (GNU stat,
sha1sum, readlink, find), and judged: settled only where every path and service is as the task wants it."""

import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import file_status

pytestmark = pytest.mark.skipif(not shutil.which("find"), reason="needs GNU coreutils and findutils")

# `systemctl show -p Id,LoadState,ActiveState,UnitFileState,NeedDaemonReload chrony prometheus` on a node.
SHOW = """Id=chrony.service
LoadState=loaded
ActiveState=active
UnitFileState=enabled
NeedDaemonReload=no

Id=prometheus.service
LoadState=loaded
ActiveState={active}
UnitFileState=enabled
NeedDaemonReload={reload}
"""


def task(tmp_path, **changes):
    """A task's options (as the action hands them to the module) for a tree this test builds."""
    params = {
        "directories": [{"path": str(tmp_path / "etc"), "mode": "0755", "owner": str(os.getuid()), "group": None}],
        "files": [
            {"path": str(tmp_path / "etc/a.conf"), "mode": "0644", "content": "a=1\n", "owner": None, "group": None},
            {"path": str(tmp_path / "etc/empty b.conf"), "mode": "0600", "content": "", "owner": None, "group": None},
        ],
        "links": [{"path": str(tmp_path / "current"), "target": "etc/a.conf"}],
        "prune": [{"path": str(tmp_path / "etc"), "patterns": ["*.conf"]}],
        "services": [],
        "also_changed": [],
    }
    params.update(changes)
    return params


def build(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir(mode=0o755)
    (etc / "a.conf").write_text("a=1\n")
    (etc / "empty b.conf").write_text("")
    os.chmod(etc / "a.conf", 0o644)
    os.chmod(etc / "empty b.conf", 0o600)
    (etc / "notes.txt").write_text("not matched by the patterns\n")
    os.symlink("etc/a.conf", tmp_path / "current")


def read(params, show=""):
    """The shell read's output, with a services answer put where systemctl's would be (no systemd here)."""
    command = file_status.read_command(dict(params, services=[]))
    out = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=True).stdout
    return out.replace(f"{file_status.END}\n", f"{show}{file_status.END}\n")


def test_a_tree_as_the_task_wants_it_is_settled(tmp_path):
    build(tmp_path)
    params = task(tmp_path)
    assert file_status.readable(params)
    assert file_status.settled(params, read(params), check_mode=False) is None


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda t: (t / "etc/a.conf").write_text("a=2\n"), "a.conf: content differs"),
        (lambda t: os.chmod(t / "etc/a.conf", 0o664), "a.conf: missing, or not as asked"),
        (lambda t: (t / "etc/a.conf").unlink(), "a.conf: missing, or not as asked"),
        (lambda t: os.chmod(t / "etc", 0o700), "etc: missing, or not as asked"),
        (lambda t: (t / "current").unlink(), "current: not a link to etc/a.conf"),
        (lambda t: (t / "etc/old.conf").write_text("x\n"), "old.conf: to remove"),
        # A file reached through a link is the module's to judge.
        (lambda t: os.replace(t / "etc/a.conf", t / "a.real") or os.symlink(t / "a.real", t / "etc/a.conf"), "a.conf"),
        # An answer with a line break in it (a link's target on disk) is not read as two answers.
        (lambda t: (t / "current").unlink() or os.symlink("etc/a.conf\n1:x", t / "current"), "broke its line"),
        (lambda t: (t / "etc/new\nline.conf").write_text("x"), "did not finish"),
    ],
)
def test_what_differs_leaves_the_task_to_the_module(tmp_path, change, why):
    build(tmp_path)
    change(tmp_path)
    params = task(tmp_path)
    assert why in file_status.settled(params, read(params), check_mode=False)


def test_a_prune_listing_find_did_not_finish_is_not_read_as_a_short_one(tmp_path):
    build(tmp_path)
    (tmp_path / "etc/old.conf").write_text("x\n")
    params = task(tmp_path)
    # find failed (a find without -printf, say) after printing nothing, or part of the listing.
    for listing in ("", "notes.txt/"):
        out = re.sub(r"^6:.*$", f"6:{listing}", read(params), flags=re.M)  # the prune directory
        assert file_status.settled(params, out, check_mode=False).endswith("its listing did not finish")
    # A prune directory that does not exist has nothing to remove.
    params["prune"][0]["path"] = str(tmp_path / "gone")
    assert file_status.settled(params, read(params), check_mode=False) is None


def test_lines_ended_by_a_terminal_read_alike(tmp_path):
    # Over SSH Ansible asks for a terminal where it may become another user: the lines come back in CRLF.
    build(tmp_path)
    params = task(tmp_path)
    assert file_status.settled(params, read(params).replace("\n", "\r\n"), check_mode=False) is None


def test_owners_by_name_or_number(tmp_path):
    build(tmp_path)
    name = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    for owner, settled in ((name, True), (str(os.getuid()), True), ("gpulab-nobody", False), ("99999", False)):
        params = task(tmp_path)
        params["files"][0]["owner"] = owner
        assert (file_status.settled(params, read(params), check_mode=False) is None) is settled, owner


def test_services_settled_only_where_enabled_running_and_not_to_restart(tmp_path):
    build(tmp_path)
    services = [
        {"name": "chrony", "start": True, "restart_on": []},
        {"name": "prometheus", "start": True, "restart_on": ["*/prometheus.yml"]},
    ]
    params = task(tmp_path, services=services)
    running = SHOW.format(active="active", reload="no")
    assert file_status.settled(params, read(params, running), check_mode=False) is None
    stopped = SHOW.format(active="inactive", reload="no")
    assert file_status.settled(params, read(params, stopped), check_mode=False) == "prometheus: start"
    stale = SHOW.format(active="active", reload="yes")
    assert file_status.settled(params, read(params, stale), check_mode=False) == "a unit changed on disk"
    # A path an earlier task changed that a restart_on pattern matches.
    changed = task(tmp_path, services=services, also_changed=["/etc/prometheus/prometheus.yml"])
    assert file_status.settled(changed, read(changed, running), check_mode=False) == "prometheus: restart"
    # A unit an earlier task wrote: the module has systemd read its units again first.
    unit = task(tmp_path, services=services, also_changed=["/etc/systemd/system/prometheus.service"])
    assert file_status.settled(unit, read(unit, running), check_mode=False) == "systemd reads its units again"
    # systemctl answered for fewer units than asked (no systemd): the module's to report.
    assert "1 units, 2 asked" in file_status.settled(params, read(params, running.split("\n\n", maxsplit=1)[0]), False)


def test_a_read_that_did_not_finish_or_what_it_cannot_judge(tmp_path):
    build(tmp_path)
    params = task(tmp_path)
    assert file_status.settled(params, read(params).replace(file_status.END, ""), False) == "the read did not finish"
    assert not file_status.readable(task(tmp_path, directories=[{"path": "/etc/x", "mode": "u=rwx,go=rx"}]))
    assert not file_status.readable(task(tmp_path, prune=[{"path": "~/x", "patterns": ["*"]}]))
    assert not file_status.readable(task(tmp_path, links=[{"path": "/etc/l", "target": "a\nb"}]))
