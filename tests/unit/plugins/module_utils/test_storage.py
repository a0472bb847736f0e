from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import storage

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "storage"


def signatures(name):
    return storage.parse_wipefs_json((FIXTURES / f"wipefs-{name}.json").read_text())


def test_recorded_signatures():
    assert signatures("empty") == []
    assert signatures("ext4") == [
        {"type": "ext4", "offset": "0x438", "uuid": "358f05af-2e82-49e5-ade0-be0e1f99cae5", "label": None}
    ]
    assert [s["type"] for s in signatures("gpt")] == ["gpt", "gpt", "PMBR"]
    luks = signatures("luks2")
    assert [s["type"] for s in luks] == ["crypto_LUKS", "crypto_LUKS"]  # LUKS2 keeps a second header
    assert luks[0]["uuid"] == "834a6fb9-eef7-489c-983b-92e6563bf467"
    assert storage.parse_wipefs_json("") == []  # older wipefs prints nothing for a blank device


def test_garbage_is_an_error_not_an_empty_disk():
    with pytest.raises(storage.StorageParseError, match="not wipefs --json output"):
        storage.parse_wipefs_json("offset type\n0x438 ext4\n")


@pytest.mark.parametrize(
    ("fixture", "expect", "state"),
    [
        ("empty", ["crypto_LUKS"], "empty"),
        ("luks2", ["crypto_LUKS"], "expected"),
        ("ext4", ["crypto_LUKS"], "foreign"),
        ("ext4", ["ext4"], "expected"),
        ("gpt", ["ext4"], "foreign"),
        ("luks2", [], "foreign"),
    ],
)
def test_classify(fixture, expect, state):
    assert storage.classify(signatures(fixture), expect) == state


def test_a_label_makes_only_the_roles_own_format_expected():
    ours = [{"type": "ext4", "offset": "0x438", "uuid": "u", "label": "gpulab-l1"}]
    assert storage.classify(ours, ["ext4"], label="gpulab-l1") == "expected"
    assert storage.classify(signatures("ext4"), ["ext4"], label="gpulab-l1") == "foreign"  # unlabelled
    assert storage.classify(signatures("luks2"), ["crypto_LUKS"], label="gpulab-data0") == "foreign"


def test_describe_and_refuse_in_words():
    assert storage.describe(signatures("gpt")) == "a gpt partition table, a protective MBR"
    assert storage.describe(signatures("luks2")) == "crypto_LUKS (UUID 834a6fb9-eef7-489c-983b-92e6563bf467)"
    labelled = [{"type": "xfs", "offset": "0x0", "uuid": None, "label": "datasets"}]
    assert storage.describe(labelled) == "xfs (label datasets)"
    assert storage.refusal("/dev/xvdc", signatures("ext4"), "luks_allow_overwrite") == (
        "refusing to write to /dev/xvdc: it holds ext4 (UUID 358f05af-2e82-49e5-ade0-be0e1f99cae5). "
        "Nothing was changed. If its data may be destroyed, add /dev/xvdc to luks_allow_overwrite."
    )


def test_bluestore_label_without_its_key():
    label = storage.parse_bluestore_label((FIXTURES / "bluestore-show-label.json").read_text())
    assert label == {
        "ceph_fsid": "421e28b5-f09a-4a0c-860f-317d542b231c",
        "osd_id": 0,
        "osd_uuid": "e0295c2d-e3d5-4ed0-8a27-9d0eb6de266c",
    }
    with pytest.raises(storage.StorageParseError, match="for one device"):
        storage.parse_bluestore_label('{"/dev/a": {}, "/dev/b": {}}')
    osd = [dict(signatures("ceph-bluestore")[0], label=label["ceph_fsid"], **label)]
    assert storage.describe(osd) == "ceph_bluestore (OSD 0 of Ceph cluster 421e28b5-f09a-4a0c-860f-317d542b231c)"
    assert storage.classify(osd, ["ceph_bluestore"], label="421e28b5-f09a-4a0c-860f-317d542b231c") == "expected"
    assert storage.classify(osd, ["ceph_bluestore"], label="another-cluster") == "foreign"
