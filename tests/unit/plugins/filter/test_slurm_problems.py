import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.slurm import (
    drain_prefix,
    other_drain_prefixes,
    slurm_controller_host,
    slurm_problems,
)

GROUPS = {"all": ["mgmt1", "gpu1", "gpu2"], "management": ["mgmt1"], "compute": ["gpu1", "gpu2"]}
NODE = {"gpulab_cpus": 16, "gpulab_memory_mb": 64000, "gpulab_gpu_count": 2}
HOSTVARS = {"mgmt1": {}, "gpu1": dict(NODE), "gpu2": dict(NODE)}
GPU = [{"name": "gpu", "default": True}]


def test_a_good_inventory_has_no_problems():
    assert slurm_problems(HOSTVARS, GROUPS, "mgmt1", GPU, "generate", "") == []
    assert slurm_problems(HOSTVARS, GROUPS, "mgmt1", GPU, "vault", "k" * 64) == []


def test_each_bad_input_is_named():
    hostvars = dict(HOSTVARS, gpu2=dict(NODE, gpulab_gpu_count=0, gpulab_cpus=None))
    partitions = [{"name": "gpu", "default": True, "nodes": ["gpu1", "gpu7"]}, {"name": "gpu", "default": True}]
    assert slurm_problems(hostvars, GROUPS, "ctl9", partitions, "vault", "") == [
        "slurm_controller 'ctl9' is not an inventory host (default: the first management node)",
        "gpu2: gpulab_cpus must be a whole number of at least 1, got None; Slurm's node line comes from the "
        "inventory so that one node can be added with --limit",
        "gpu2: gpulab_gpu_count must be a whole number of at least 1, got 0; leave it unset on a node without GPUs",
        "slurm_partitions 'gpu' names node(s) not in the compute group: gpu7",
        "slurm_partitions has duplicate names: gpu",
        "more than one slurm_partitions entry has default: true",
        "slurm_munge_key is empty while slurm_munge_key_source is 'vault': put the key in an Ansible Vault file "
        "(e.g. dd if=/dev/urandom bs=48 count=1 | base64 -w0) or use slurm_munge_key_source: generate",
    ]


def test_short_munge_key_and_empty_compute():
    groups = dict(GROUPS, compute=[])
    assert slurm_problems(HOSTVARS, groups, "mgmt1", GPU, "vault", "short") == [
        "the compute group is empty: Slurm needs at least one compute node",
        "slurm_munge_key is shorter than 32 characters; munged refuses it",
    ]


def test_the_controller_is_the_one_named_else_the_first_management_node():
    groups = {"management": ["mgmt1", "mgmt2"], "compute": ["gpu1"]}
    assert slurm_controller_host("", groups) == "mgmt1"
    assert slurm_controller_host(None, groups) == "mgmt1"
    assert slurm_controller_host("mgmt2", groups) == "mgmt2"
    assert slurm_controller_host("", {"compute": ["gpu1"]}) == ""  # no Slurm without a management node


def test_each_owner_drains_under_its_own_prefix_and_leaves_the_others():
    assert drain_prefix("ups") == "gpulab: ups:"
    assert other_drain_prefixes("node_check") == [
        "gpulab: validate:",
        "gpulab: upgrade",
        "gpulab: upgrade-ceph:",
        "gpulab: ups:",
    ]
    assert "gpulab: validate:" not in other_drain_prefixes("validate")
    with pytest.raises(AnsibleFilterError, match="unknown owner 'backup', known: node_check, validate"):
        drain_prefix("backup")


TIERS = [
    {"name": "scavenger", "priority": 0, "preempt_mode": "requeue", "grace_time": 120},
    {"name": "interactive", "priority": 1000, "preempt": ["scavenger"], "max_wall": "04:00:00"},
]


def test_the_preemption_tiers_and_partitions_that_name_them_pass():
    partitions = [{"name": "gpu", "default": True, "options": {"AllowQos": "normal,scavenger,interactive"}}]
    accounts = [{"name": "vision", "qos": ["normal", "scavenger"]}]
    qos = {"slurm_qos": [], "slurm_preemption_tiers": TIERS}
    assert slurm_problems(HOSTVARS, GROUPS, "mgmt1", partitions, "generate", "", qos=qos, accounts=accounts) == []


def test_bad_qos_input_is_named():
    tiers = [dict(TIERS[0], grace_time="2m"), dict(TIERS[1], preempt=["scavenger", "batch"], max_wall="4h")]
    partitions = [{"name": "gpu", "default": True, "options": {"QOS": "express"}}]
    accounts = [{"name": "vision", "qos": ["normal", "long"]}]
    qos = {"slurm_qos": [{"name": "scavenger"}], "slurm_preemption_tiers": tiers}
    problems = slurm_problems(
        HOSTVARS,
        GROUPS,
        "mgmt1",
        partitions,
        "generate",
        "",
        qos=qos,
        accounts=accounts,
        accounting="accounting_storage/none",
    )
    assert problems == [
        "slurm_preemption_tiers[0] 'scavenger': grace_time must be a whole number of seconds, got '2m'",
        "slurm_preemption_tiers[1] 'interactive': max_wall must be a Slurm time like 04:00:00 or 1-00:00:00, got '4h'",
        "slurm_preemption_tiers[1] 'interactive': preempt names QOS that are not defined: batch",
        "QOS defined twice (in slurm_qos and slurm_preemption_tiers): scavenger",
        "slurm_partitions 'gpu' QOS names QOS not defined in slurm_qos, slurm_preemption_tiers (or Slurm's normal): "
        "express",
        "slurm_accounts 'vision' names QOS not defined in slurm_qos, slurm_preemption_tiers (or Slurm's normal): long",
        "slurm_preemption needs Slurm accounting (its QOS live in slurmdbd), but slurm_config sets "
        "AccountingStorageType=accounting_storage/none",
    ]
