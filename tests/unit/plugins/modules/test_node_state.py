"""node_state: paths, units and the Ceph cluster read in one module run, from output recorded on the lab's storage1."""

import grp
import os
import pwd
from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.modules import node_state

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ceph"
UNITS = ["ceph-mon@storage1", "ceph-mgr@storage1", "ceph-mds@storage2"]


def answers(table):
    """A run_command answering each command (its words after any `timeout N`) from table; records them."""
    seen = []

    def run(module, cmd, **kw):
        words = cmd[2:] if cmd[0] == "timeout" else cmd
        seen.append(list(cmd))
        return next(answer for prefix, answer in table.items() if tuple(words[: len(prefix)]) == prefix)

    return run, seen


CEPH = {
    ("systemctl", "show"): (0, (FIXTURES / "show-units.txt").read_text(), ""),
    ("ceph", "status"): (0, (FIXTURES / "status-ok.json").read_text(), ""),
    ("ceph", "fs", "ls"): (0, (FIXTURES / "fs-ls.json").read_text(), ""),
}


def test_paths_units_and_the_cluster_in_one_run(run_module, tmp_path):
    keyring = tmp_path / "ceph.client.admin.keyring"
    keyring.write_text("[client.admin]\n")
    keyring.chmod(0o600)
    run, seen = answers(CEPH)
    args = {"paths": [str(tmp_path), str(keyring), str(tmp_path / "none")], "units": UNITS, "ceph": True}
    args["admin_keyring"] = str(keyring)
    result, failed = run_module(node_state.main, args, run_command=run, check_mode=True)
    assert not failed and result["changed"] is False
    me = f"{pwd.getpwuid(os.getuid())[0]}:{grp.getgrgid(os.getgid())[0]}"
    assert result["paths"] == {
        str(tmp_path): f"{me} {tmp_path.stat().st_mode & 0o7777:04o}",
        str(keyring): f"{me} 0600",
        str(tmp_path / "none"): None,
    }
    assert result["units"] == {
        "ceph-mon@storage1": {"active": True, "enabled": True, "load": "loaded"},
        "ceph-mgr@storage1": {"active": True, "enabled": True, "load": "loaded"},
        "ceph-mds@storage2": {"active": False, "enabled": False, "load": "loaded"},
    }
    assert result["running"] == ["ceph-mon@storage1", "ceph-mgr@storage1"]
    assert result["ceph"] == {
        "answered": True,
        "why": None,
        "quorum": ["storage1"],
        "health": "HEALTH_OK",
        "checks": {},
        "mgr_modules": ["iostat", "nfs", "prometheus", "restful"],
        "fs": ["cephfs"],
    }
    # One systemctl call for every unit; each ceph call under the timeout.
    assert seen[0][:4] == ["systemctl", "show", "-p", "Id,LoadState,ActiveState,UnitFileState,NeedDaemonReload"]
    assert seen[0][4:] == UNITS
    timed = ["timeout", "10", "ceph"]
    assert seen[1:] == [[*timed, "status", "-f", "json"], [*timed, "fs", "ls", "-f", "json"]]


def test_contents_are_read_whole_and_a_missing_file_is_null(run_module, tmp_path):
    settings = tmp_path / "daemon.json"
    settings.write_text('{\n    "log-driver": "journald"\n}\n')
    args = {"contents": [str(settings), str(tmp_path / "none")]}
    result, failed = run_module(node_state.main, args, check_mode=True)
    assert not failed and result["changed"] is False
    assert result["contents"] == {str(settings): '{\n    "log-driver": "journald"\n}\n', str(tmp_path / "none"): None}
    assert result["paths"] == {} and result["units"] == {} and result["running"] == []


def test_contents_refuse_a_large_file_and_a_directory_naming_them(run_module, tmp_path, monkeypatch):
    monkeypatch.setattr(node_state, "MAX_CONTENT", 8)
    big = tmp_path / "big"
    big.write_text("123456789")
    result, failed = run_module(node_state.main, {"contents": [str(big)]})
    assert failed and result["msg"] == f"node_state: {big} is over 8 bytes; contents reads small text files"
    result, failed = run_module(node_state.main, {"contents": [str(tmp_path)]})
    assert failed and result["msg"] == f"node_state: {tmp_path} could not be read: Is a directory"


def test_the_cluster_is_not_asked_without_the_admin_keyring_or_when_told_not_to(run_module, tmp_path):
    run, seen = answers(CEPH)
    result, failed = run_module(
        node_state.main, {"ceph": True, "admin_keyring": str(tmp_path / "none")}, run_command=run
    )
    assert not failed and seen == []
    assert result["ceph"]["answered"] is False
    assert result["ceph"]["why"] == f"no admin keyring here ({tmp_path / 'none'})"
    assert (result["ceph"]["quorum"], result["ceph"]["mgr_modules"], result["ceph"]["fs"]) == ([], [], None)
    result, failed = run_module(node_state.main, {}, run_command=run)
    assert not failed and seen == [] and result["ceph"]["why"] == "not asked"
    assert (result["paths"], result["units"], result["running"]) == ({}, {}, [])


def test_monitors_that_do_not_answer_are_a_reason_not_a_failure(run_module, tmp_path):
    keyring = tmp_path / "admin.keyring"
    keyring.write_text("")
    run, _seen = answers({("ceph",): (124, "", "")})
    result, failed = run_module(
        node_state.main, {"ceph": True, "admin_keyring": str(keyring), "timeout": 3}, run_command=run
    )
    assert not failed
    assert result["ceph"]["answered"] is False
    assert result["ceph"]["why"] == "ceph status did not answer in 3 s"
    run, _seen = answers({("ceph",): (1, "", "[errno 13] RADOS permission denied (error connecting to the cluster)")})
    result, failed = run_module(node_state.main, {"ceph": True, "admin_keyring": str(keyring)}, run_command=run)
    assert result["ceph"]["why"] == (
        "ceph status failed (rc 1): [errno 13] RADOS permission denied (error connecting to the cluster)"
    )


def test_bad_input_and_unreadable_output_fail_naming_them(run_module, tmp_path):
    result, failed = run_module(node_state.main, {"timeout": 0})
    assert failed and result["msg"] == "timeout must be at least 1, got 0"
    run, _seen = answers({("systemctl",): (0, "Id=ceph-mon@storage1.service\n", "")})
    result, failed = run_module(node_state.main, {"units": ["ceph-mon@storage1"]}, run_command=run)
    assert failed and result["msg"].startswith("node_state: systemctl show left out LoadState")
    keyring = tmp_path / "admin.keyring"
    keyring.write_text("")
    run, _seen = answers({("ceph",): (0, "not json", "")})
    result, failed = run_module(node_state.main, {"ceph": True, "admin_keyring": str(keyring)}, run_command=run)
    assert failed and result["msg"].startswith("node_state: ceph status is not JSON")
