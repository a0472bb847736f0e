import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import slurm

# `sacctmgr -n -P show association cluster=gpulab format=Account,User,Fairshare` on Slurm 22.05:
# the root account, root's own association, then each account and its users.
ASSOC = "root||1\nroot|root|1\nvision||1\nvision|alice|1\n"


def test_parse_parsable():
    rows = slurm.parse_parsable(ASSOC, ["Account", "User", "Fairshare"])
    assert rows[3] == {"Account": "vision", "User": "alice", "Fairshare": "1"}
    with pytest.raises(slurm.SlurmParseError, match="expected 3 fields"):
        slurm.parse_parsable("sacctmgr: error: Problem talking to the database\n", ["Account", "User", "Fairshare"])


def test_plan_adds_only_what_is_missing():
    rows = slurm.parse_parsable(ASSOC, ["Account", "User", "Fairshare"])
    accounts = [
        {"name": "vision", "fairshare": 1, "users": ["alice", "carol"]},
        {"name": "nlp", "fairshare": 2, "description": "language", "qos": ["normal", "long"], "users": ["bob"]},
    ]
    commands = slurm.plan(
        "gpulab",
        ["gpulab"],
        accounts,
        [{"name": "long", "priority": 10}, {"name": "normal"}],
        [r for r in rows if not r["User"]],
        [r for r in rows if r["User"]],
        ["normal"],
    )
    assert commands == [
        ["add", "qos", "long", "Priority=10"],
        ["add", "user", "carol", "Account=vision", "Cluster=gpulab"],
        [
            "add", "account", "nlp", "Cluster=gpulab", "Description=language", "Fairshare=2",
            "Organization=nlp", "QOS=normal,long",
        ],
        ["add", "user", "bob", "Account=nlp", "Cluster=gpulab"],
    ]  # fmt: skip


def test_plan_registers_the_cluster_and_fixes_fairshare():
    commands = slurm.plan(
        "gpulab", [], [{"name": "vision", "fairshare": 5}], [], [{"Account": "vision", "Fairshare": "1"}], [], []
    )
    assert commands == [
        ["add", "cluster", "gpulab"],
        ["modify", "account", "where", "Name=vision", "Cluster=gpulab", "set", "Fairshare=5"],
    ]


def test_plan_is_empty_when_everything_is_there():
    rows = slurm.parse_parsable(ASSOC, ["Account", "User", "Fairshare"])
    accounts = [{"name": "vision", "fairshare": 1, "users": ["alice"]}]
    existing = ([r for r in rows if not r["User"]], [r for r in rows if r["User"]], [])
    assert slurm.plan("gpulab", ["gpulab"], accounts, [], *existing) == []
