import os
import stat
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.modules import device_signatures

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "storage"


@pytest.fixture
def block_device(monkeypatch):
    """Make os.stat report a block device for /dev/xvd*, and wipefs be found."""
    real_stat = os.stat

    def fake_stat(path, *a, **k):
        if str(path).startswith("/dev/xvd"):
            return os.stat_result((stat.S_IFBLK | 0o660, 0, 0, 1, 0, 6, 0, 0, 0, 0))
        return real_stat(path, *a, **k)

    monkeypatch.setattr(device_signatures.os, "stat", fake_stat)
    monkeypatch.setattr(
        device_signatures.AnsibleModule, "get_bin_path", lambda self, name, required=False: f"/usr/sbin/{name}"
    )


def wipefs_says(fixture, rc=0):
    def run(module, cmd, environ_update=None, **kw):
        assert cmd == ["/usr/sbin/wipefs", "--json", "/dev/xvdc"]
        return rc, (FIXTURES / f"wipefs-{fixture}.json").read_text() if fixture else "", "wipefs: error" if rc else ""

    return run


def test_a_device_with_a_file_system_is_refused(run_module, block_device):
    args = {"device": "/dev/xvdc", "expect": ["crypto_LUKS"], "allow_variable": "luks_allow_overwrite"}
    result, failed = run_module(device_signatures.main, args, run_command=wipefs_says("ext4"), check_mode=True)
    assert failed
    assert result["msg"].startswith("refusing to write to /dev/xvdc: it holds ext4 (UUID 358f05af-")
    assert result["msg"].endswith("add /dev/xvdc to luks_allow_overwrite.")
    assert result["state"] == "foreign"


def test_named_device_is_reported_not_refused(run_module, block_device):
    args = {"device": "/dev/xvdc", "expect": ["crypto_LUKS"], "allow_overwrite": True}
    result, failed = run_module(device_signatures.main, args, run_command=wipefs_says("ext4"))
    assert not failed and result["state"] == "foreign" and result["changed"] is False


@pytest.mark.parametrize(("fixture", "state"), [("empty", "empty"), ("luks2", "expected")])
def test_empty_and_own_format_pass(run_module, block_device, fixture, state):
    args = {"device": "/dev/xvdc", "expect": ["crypto_LUKS"]}
    result, failed = run_module(device_signatures.main, args, run_command=wipefs_says(fixture))
    assert not failed and result["state"] == state


def test_could_not_check_is_not_empty(run_module, block_device):
    result, failed = run_module(device_signatures.main, {"device": "/dev/xvdc"}, run_command=wipefs_says(None, rc=1))
    assert failed and result["msg"] == "could not read the signatures on /dev/xvdc: wipefs exited 1: wipefs: error"


def test_not_a_block_device(run_module, tmp_path):
    path = tmp_path / "disk.img"
    path.write_bytes(b"")
    result, failed = run_module(device_signatures.main, {"device": str(path)})
    assert failed and result["msg"] == f"{path} is not a block device"
    result, failed = run_module(device_signatures.main, {"device": str(tmp_path / "missing")})
    assert failed and result["msg"] == f"cannot look at {tmp_path / 'missing'}: No such file or directory"
