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


def bluestore_says(label_rc=0):
    def run(module, cmd, environ_update=None, **kw):
        if cmd[0].endswith("wipefs"):
            return 0, (FIXTURES / "wipefs-ceph-bluestore.json").read_text(), ""
        assert cmd == ["/usr/sbin/ceph-bluestore-tool", "show-label", "--dev", "/dev/xvdc"]
        return label_rc, (FIXTURES / "bluestore-show-label.json").read_text(), ""

    return run


def test_an_osd_of_this_cluster_is_expected_and_its_key_is_not_returned(run_module, block_device):
    args = {"device": "/dev/xvdc", "expect": ["ceph_bluestore"], "expect_label": "421e28b5-f09a-4a0c-860f-317d542b231c"}
    result, failed = run_module(device_signatures.main, args, run_command=bluestore_says())
    assert not failed and result["state"] == "expected"
    assert result["ceph"] == {
        "ceph_fsid": "421e28b5-f09a-4a0c-860f-317d542b231c",
        "osd_id": 0,
        "osd_uuid": "e0295c2d-e3d5-4ed0-8a27-9d0eb6de266c",
    }
    assert "AQDf" not in repr(result)  # the OSD's key from the label


def test_an_osd_of_another_cluster_is_refused(run_module, block_device):
    args = {"device": "/dev/xvdc", "expect": ["ceph_bluestore"], "expect_label": "0000", "allow_variable": "x"}
    result, failed = run_module(device_signatures.main, args, run_command=bluestore_says())
    assert failed and "it holds ceph_bluestore (OSD 0 of Ceph cluster 421e28b5-" in result["msg"]


def test_an_unreadable_bluestore_label_is_foreign(run_module, block_device):
    args = {"device": "/dev/xvdc", "expect": ["ceph_bluestore"], "expect_label": "421e28b5-f09a-4a0c-860f-317d542b231c"}
    result, failed = run_module(device_signatures.main, args, run_command=bluestore_says(label_rc=1))
    assert failed and result["state"] == "foreign" and "ceph" not in result
