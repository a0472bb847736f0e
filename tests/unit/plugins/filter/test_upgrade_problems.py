from ansible_collections.gpulab.cluster.plugins.filter.upgrade import (
    ceph_daemons_on,
    ceph_refusals,
    upgrade_pins,
    upgrade_problems,
)

GOOD = {
    "upgrade_batch_size": 1,
    "upgrade_drain_timeout": 3600,
    "upgrade_reboot_timeout": 900,
    "upgrade_ceph_timeout": 900,
}
COMPUTE = ["gpu1", "gpu2"]
HOSTS = ["mgmt1", "gpu1", "gpu2"]
KNOWN = ["packages", "reboot", "nvidia_driver", "cuda", "nccl", "container_runtime"]


def test_good_settings_pass_with_or_without_tags():
    assert upgrade_problems(GOOD, ["all"], KNOWN, "mgmt1", HOSTS) == []
    assert upgrade_problems(GOOD, ["packages"], KNOWN, "mgmt1", HOSTS) == []
    # -e upgrade_batch_size=2 arrives as a string.
    assert upgrade_problems({**GOOD, "upgrade_batch_size": "2"}, ["all"], KNOWN, "mgmt1", HOSTS) == []


def test_each_bad_number_is_named():
    bad = {
        "upgrade_batch_size": 0,
        "upgrade_drain_timeout": "0",
        "upgrade_reboot_timeout": True,
        "upgrade_ceph_timeout": 1,
    }
    assert upgrade_problems(bad, ["all"], KNOWN, "mgmt1", HOSTS) == [
        "upgrade_batch_size must be a whole number of at least 1, got 0",
        "upgrade_drain_timeout must be a whole number of at least 1, got '0'",
        "upgrade_reboot_timeout must be a whole number of at least 1, got True",
    ]
    assert upgrade_problems({**GOOD, "upgrade_batch_size": "1.5"}, ["all"], KNOWN, "mgmt1", HOSTS) == [
        "upgrade_batch_size must be a whole number of at least 1, got '1.5'"
    ]


def test_unknown_tags_are_refused_naming_the_known_ones():
    assert upgrade_problems(GOOD, ["packges", "nvidia_driver"], KNOWN, "mgmt1", HOSTS) == [
        "upgrade.yml does not know the tag(s) packges; it upgrades by: packages, reboot, nvidia_driver, cuda, nccl,"
        " container_runtime"
    ]
    assert upgrade_problems(GOOD, ["nvidia_driver", "nccl", "always"], KNOWN, "mgmt1", HOSTS) == []


def test_a_controller_outside_the_inventory_is_refused_when_compute_nodes_are_upgraded():
    assert upgrade_problems(GOOD, ["all"], KNOWN, "", HOSTS, COMPUTE) == [
        "the Slurm controller '' is not an inventory host (slurm_controller, default the first management"
        " node): the upgrade drains nodes through it"
    ]
    # Storage nodes alone (--limit) need no Slurm.
    assert upgrade_problems(GOOD, ["all"], KNOWN, "", HOSTS, []) == []


def test_upgrade_pins_keep_the_package_name_of_a_name_version_pair():
    assert upgrade_pins(["libnccl2=2.21.5-1+cuda12.4"], "nccl", r"^2\.21\.5-1\+cuda12\.4$", "nccl_version 2.21.5") == [
        {
            "role": "nccl",
            "package": "libnccl2",
            "version": r"^2\.21\.5-1\+cuda12\.4$",
            "wanted": "nccl_version 2.21.5",
            "venv": None,
        }
    ]
    (wheel,) = upgrade_pins(["nvidia-nccl-cu12"], "nccl", r"^2\.21\.5$", "nccl_version 2.21.5", "/opt/gpulab/nccl")
    assert wheel["venv"] == "/opt/gpulab/nccl" and wheel["package"] == "nvidia-nccl-cu12"


# `ceph node ls --format json` on a storage node that runs every kind of daemon (Ceph 16, Debian 12).
NODE_LS = {
    "mon": {"st1": ["st1"], "st2": ["st2"]},
    "osd": {"st1": [0, 1, 2], "st2": [3]},
    "mds": {"st1": ["st1"]},
    "mgr": {"st1": ["st1"]},
}


def test_the_daemons_of_one_node_by_kind_mgr_left_out():
    assert ceph_daemons_on(NODE_LS, "st1") == {"osd": ["0", "1", "2"], "mon": ["st1"], "mds": ["st1"]}
    assert ceph_daemons_on(NODE_LS, "st2") == {"osd": ["3"], "mon": ["st2"]}
    assert ceph_daemons_on({"mon": {}, "osd": {}}, "gpu1") == {}


def test_each_refusal_names_the_kind_the_daemons_and_what_ceph_said():
    results = [
        {"cmd": ["ceph", "osd", "ok-to-stop", "0", "1", "2"], "rc": 16, "stdout": "",
         "stderr": "Error EBUSY: unsafe to stop osd(s) at this time (33 PGs are or would become offline)"},
        {"cmd": ["ceph", "mon", "ok-to-stop", "st1"], "rc": 0, "stdout": "quorum should be preserved", "stderr": ""},
        {"cmd": ["ceph", "mds", "ok-to-stop", "st1"], "rc": 2, "stdout": "", "stderr": "", "msg": "no such file"},
    ]  # fmt: skip
    assert ceph_refusals(results) == [
        "osd 0 1 2: unsafe to stop osd(s) at this time (33 PGs are or would become offline)",
        "mds st1: no such file",
    ]
    assert ceph_refusals(results[1:2]) == []
