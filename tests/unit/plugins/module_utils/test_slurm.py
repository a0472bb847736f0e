from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import slurm

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"

# `sacctmgr -n -P show association cluster=gpulab format=Account,User,Fairshare,QOS` on Slurm 22.05:
# the root account, root's own association, then each account and its users.
ASSOC = "root||1|normal\nroot|root|1|normal\nvision||1|normal\nvision|alice|1|normal\n"
FIELDS = ["Account", "User", "Fairshare", "QOS"]
# `sacctmgr -n -P show qos format=Name,Priority,Preempt,PreemptMode,GraceTime,MaxWall,MaxTRESPU` on 22.05,
# once the lab's preemption tiers were in.
QOS = (
    "normal|100|scavenger|cluster|00:00:00||\n"
    "scavenger|0||requeue|00:02:00||\n"
    "interactive|1000|scavenger|cluster|00:00:00|04:00:00|\n"
)
TIERS = [
    {"name": "scavenger", "priority": 0, "preempt_mode": "requeue", "grace_time": 120},
    {"name": "normal", "priority": 100, "preempt": ["scavenger"]},
    {"name": "interactive", "priority": 1000, "preempt": ["scavenger"], "max_wall": "04:00:00"},
]
NORMAL = [{"Name": "normal", "Priority": "0", "Preempt": "", "PreemptMode": "cluster", "GraceTime": "00:00:00"}]


def test_parse_parsable():
    rows = slurm.parse_parsable(ASSOC, FIELDS)
    assert rows[3] == {"Account": "vision", "User": "alice", "Fairshare": "1", "QOS": "normal"}
    with pytest.raises(slurm.SlurmParseError, match="expected 3 fields"):
        slurm.parse_parsable("sacctmgr: error: Problem talking to the database\n", ["Account", "User", "Fairshare"])


def test_plan_adds_only_what_is_missing():
    rows = slurm.parse_parsable(ASSOC, FIELDS)
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
        NORMAL,
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
    rows = slurm.parse_parsable(ASSOC, FIELDS)
    accounts = [{"name": "vision", "fairshare": 1, "users": ["alice"]}]
    existing = ([r for r in rows if not r["User"]], [r for r in rows if r["User"]], [])
    assert slurm.plan("gpulab", ["gpulab"], accounts, [], *existing) == []


def test_preemption_tiers_are_added_then_made_to_preempt_and_opened_to_every_account():
    rows = slurm.parse_parsable(ASSOC, FIELDS)
    commands = slurm.plan(
        "gpulab",
        ["gpulab"],
        [],
        TIERS,
        [r for r in rows if not r["User"]],
        [],
        NORMAL,
        ["scavenger", "normal", "interactive"],
    )
    assert commands == [
        ["add", "qos", "scavenger", "GraceTime=120", "PreemptMode=requeue", "Priority=0"],
        ["add", "qos", "interactive", "MaxWall=04:00:00", "Priority=1000"],
        ["modify", "qos", "where", "Name=normal", "set", "Preempt=scavenger", "Priority=100"],
        ["modify", "qos", "where", "Name=interactive", "set", "Preempt=scavenger"],
        ["modify", "account", "where", "Name=root", "Cluster=gpulab", "set", "QOS+=scavenger,interactive"],
    ]  # fmt: skip


def test_tiers_as_sacctmgr_shows_them_need_nothing_and_a_changed_grace_time_is_set():
    shown = slurm.parse_parsable(QOS, slurm.QOS_FIELDS)
    root = [{"Account": "root", "User": "", "Fairshare": "1", "QOS": "interactive,normal,scavenger"}]
    names = [t["name"] for t in TIERS]
    assert slurm.plan("gpulab", ["gpulab"], [], TIERS, root, [], shown, names) == []
    # max_wall as a number is minutes, as sacctmgr reads it: 240 is the recorded 04:00:00.
    assert slurm.plan("gpulab", ["gpulab"], [], [dict(TIERS[2], max_wall=240)], root, [], shown, names) == []
    longer = [dict(TIERS[0], grace_time=300), dict(TIERS[2], preempt=[], max_wall="1-00:00:00")]
    assert slurm.plan("gpulab", ["gpulab"], [], longer, root, [], shown, names) == [
        ["modify", "qos", "where", "Name=scavenger", "set", "GraceTime=300"],
        ["modify", "qos", "where", "Name=interactive", "set", "MaxWall=1-00:00:00", "Preempt="],
    ]


@pytest.mark.parametrize(
    "text, seconds",
    [("", None), ("UNLIMITED", None), ("90", 5400), ("02:30", 150), ("04:00:00", 14400), ("1-00:00:00", 86400),
     ("2-12", 216000), ("1-02:03", 93780), (120, 120)],
)  # fmt: skip
def test_slurm_seconds(text, seconds):
    assert slurm.slurm_seconds(text) == seconds


def test_slurm_seconds_refuses_what_is_not_a_time():
    for text in ("2m", "1:2:3:4", "soon"):
        with pytest.raises(ValueError):
            slurm.slurm_seconds(text)


# `scontrol -o show node` lines from Slurm 22.05 (shortened in the middle).
IDLE = "NodeName=gpu1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE ThreadsPerCore=1 Partitions=gpu"
ADMIN = "NodeName=gpu1 Arch=x86_64 State=IDLE+DRAIN Partitions=gpu Reason=disk swap tomorrow [root@2026-11-30T12:01:02]"
OURS = "NodeName=gpu2 State=IDLE+DRAIN Reason=gpulab: validate: gpu_count: 1 of 2 [root@2026-11-30T12:01:02]"


def test_parse_node_line():
    assert slurm.parse_node_line(IDLE) == ("IDLE", "")
    assert slurm.parse_node_line(ADMIN) == ("IDLE+DRAIN", "disk swap tomorrow")
    assert slurm.parse_node_line(OURS) == ("IDLE+DRAIN", "gpulab: validate: gpu_count: 1 of 2")
    with pytest.raises(slurm.SlurmParseError):
        slurm.parse_node_line("Node gpu9 not found")


@pytest.mark.parametrize(
    "line, problem, action",
    [
        (IDLE, "gpu_count: 1 of 2", "drain"),
        (IDLE, None, None),
        (ADMIN, "gpu_count: 1 of 2", None),  # an administrator's drain is left alone
        (ADMIN, None, None),  # and never resumed
        (OURS, "gpu_count: 1 of 2", None),  # already drained for this
        (OURS, "ecc: 3 uncorrectable", "drain"),  # drained by us for something else: new reason
        (OURS, None, "resume"),
    ],
)
def test_drain_action(line, problem, action):
    state, reason = slurm.parse_node_line(line)
    assert slurm.drain_action(state, reason, problem, "gpulab: validate:") == action


@pytest.mark.parametrize(
    "state, usable",
    [
        ("IDLE", True),
        ("MIXED", True),
        ("ALLOCATED", True),
        ("IDLE+DRAIN", False),
        ("MIXED+DRAIN", False),
        ("DOWN+NOT_RESPONDING", False),
        ("IDLE*", False),
        ("DOWN", False),
        ("IDLE+MAINT", False),
    ],
)
def test_schedulable_states(state, usable):
    assert slurm.schedulable(state) is usable


def test_left_out_names_each_node_and_why():
    answers = {
        "gpu1": (0, "NodeName=gpu1 Arch=x86_64 State=IDLE Reason=\n", ""),
        "gpu2": (
            0,
            "NodeName=gpu2 State=IDLE+DRAIN Reason=gpulab: validate: gpu_count [root@2026-12-01T14:00:00]\n",
            "",
        ),
        "gpu9": (1, "", "Node gpu9 not found\n"),
    }
    why = slurm.left_out(lambda argv: answers[argv[-1]], ["gpu1", "gpu2", "gpu9"])
    assert why == {"gpu2": "IDLE+DRAIN: gpulab: validate: gpu_count", "gpu9": "unknown to Slurm (Node gpu9 not found)"}


# gpu1's line as the lab's slurmctld printed it (fixtures/slurm), with its state and reason changed the way
# slurmctld writes them when a node is lost or drained.
GPU1 = (FIXTURES / "scontrol-show-node.txt").read_text().splitlines()[0]


def statuses(records):
    return [(r.check, r.status, r.code) for r in records]


def test_a_healthy_node_passes_with_the_controllers_credential():
    records = slurm.node_health("gpu1", "active", (0, GPU1), (0, "STATUS: Success (0)\n"))
    assert statuses(records) == [
        ("slurm.slurmd", "pass", None),
        ("slurm.munge", "pass", None),
        ("slurm.node", "pass", None),
    ]
    assert records[2].message == "slurmctld reports gpu1 ALLOCATED"


def test_a_stopped_slurmd_and_a_foreign_munge_key_fail_at_once():
    records = slurm.node_health("gpu2", "inactive", (0, GPU1), (14, "unmunge: Error: Invalid credential\n"))
    assert statuses(records) == [
        ("slurm.slurmd", "fail", "SLURM_SLURMD_DOWN"),
        ("slurm.munge", "fail", "SLURM_MUNGE"),
        ("slurm.node", "pass", None),  # slurmctld notices only after SlurmdTimeout
    ]
    assert records[0].message.startswith("slurmd is inactive on gpu2: no job starts here")
    assert "(unmunge: Error: Invalid credential)" in records[1].message


@pytest.mark.parametrize(
    "state, reason, status, code",
    [
        ("DOWN+NOT_RESPONDING", "Not responding", "fail", "SLURM_NODE_DOWN"),
        ("IDLE+NOT_RESPONDING", "", "warn", "SLURM_NOT_RESPONDING"),  # a ping unanswered, not yet DOWN
        ("IDLE*", "", "warn", "SLURM_NOT_RESPONDING"),
        ("IDLE+DRAIN", "disk swap tomorrow", "warn", "SLURM_DRAINED"),
        ("IDLE+DRAIN", "gpulab: validate: gpu_count: 0 of 2", "pass", None),  # the check that drained it reports
        ("MIXED", "", "pass", None),
    ],
)
def test_the_state_slurmctld_gives(state, reason, status, code):
    line = GPU1.replace("State=ALLOCATED", f"State={state}").split(" Reason=")[0] + (
        f" Reason={reason} [slurm@2026-12-04T10:00:00]" if reason else ""
    )
    record = slurm.node_health("gpu1", "active", (0, line), None)[-1]
    assert (record.status, record.code) == (status, code)


def test_an_unknown_node_and_an_unreachable_controller_are_told_apart():
    unknown = slurm.node_health("gpu9", "active", (1, "Node gpu9 not found\nInvalid node name specified\n"), None)
    assert unknown[-1].code == "SLURM_NODE_UNKNOWN"
    lost = slurm.node_health(
        "gpu1", "active", (1, "slurm_load_node error: Zero Bytes were transmitted or received"), None
    )
    assert lost[-1].code == "SLURM_CTLD_UNREACHABLE"
    assert slurm.node_health("gpu1", "active", (124, ""), None)[-1].message.startswith(
        "asking slurmctld about gpu1 did not answer in 30 s"
    )


CONFIG = (FIXTURES / "scontrol-show-config-preempt.txt").read_text()


def test_parse_config_reads_the_preemption_settings():
    config = slurm.parse_config(CONFIG)
    assert (config["PreemptType"], config["PreemptMode"], config["AuthInfo"]) == (
        "preempt/qos",
        "REQUEUE",
        "cred_expire=20",
    )


def test_scheduler_health_lists_each_tier_with_who_preempts_it():
    rows = slurm.parse_parsable(QOS, slurm.QOS_FIELDS)
    records = slurm.scheduler_health((0, CONFIG), rows, True, ["scavenger", "normal", "interactive"])
    assert [(r.check, r.status) for r in records] == [("slurm.preemption", "pass"), ("slurm.qos", "pass")]
    assert records[0].message == "PreemptType=preempt/qos, PreemptMode=REQUEUE"
    assert records[1].message == (
        "scavenger: priority 0, preempted by normal, interactive (requeue, 120 s grace); normal: priority 100; "
        "interactive: priority 1000, at most 04:00:00"
    )


def test_scheduler_health_fails_where_slurm_does_not_do_what_the_inventory_asks():
    off = CONFIG.replace("preempt/qos", "preempt/none").replace("= REQUEUE", "= OFF")
    rows = slurm.parse_parsable(QOS, slurm.QOS_FIELDS)
    (record,) = slurm.scheduler_health((0, off), rows, True, [])
    assert (record.status, record.code) == ("fail", "SLURM_PREEMPTION_OFF")
    assert "slurmctld runs PreemptType=preempt/none" in record.message
    records = slurm.scheduler_health((0, CONFIG), rows[:1], True, ["normal", "scavenger"])
    assert (records[1].status, records[1].code) == ("fail", "SLURM_QOS_MISSING")
    assert records[1].message.startswith("QOS tier(s) scavenger missing from Slurm accounting")
    (record,) = slurm.scheduler_health(
        (1, "slurm_load_ctl_conf error: Unable to contact slurm controller"), [], True, []
    )
    assert (record.status, record.code) == ("fail", "SLURM_CTLD_UNREACHABLE")


def test_scheduler_health_with_preemption_off_does_not_apply():
    off = CONFIG.replace("preempt/qos", "preempt/none")
    assert [(r.status, r.message) for r in slurm.scheduler_health((0, off), [], False, [])] == [
        ("n/a", "preemption is off (slurm_preemption: false)")
    ]


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("slurm-gpu[1-2]", ["slurm-gpu1", "slurm-gpu2"]),
        ("gpu[01-03,07],mgmt1", ["gpu01", "gpu02", "gpu03", "gpu07", "mgmt1"]),
        ("node7", ["node7"]),
    ],
)
def test_slurm_host_lists_expand(text, hosts):
    assert slurm.expand_hostlist(text) == hosts


def test_running_jobs_are_read_with_the_gpus_they_hold_on_each_node():
    jobs = slurm.running_gpu_jobs((FIXTURES / "scontrol-d-show-job-gpus.txt").read_text())
    assert [(j["job"], j["name"], j["user"], j["gpus"]) for j in jobs] == [
        ("7", "train", "root", [("slurm-gpu1", "0"), ("slurm-gpu2", "0")]),
        ("8", "nlp", "root", [("slurm-gpu2", "1")]),
    ]
    assert [j["runtime_s"] for j in jobs] == [4, 1]


# Prometheus's answer to max_over_time(gpulab_gpu_utilization_ratio[30m]), as its HTTP API gives data.result.
def busy(values):
    return [
        {"metric": {"__name__": "x", "instance": node, "gpu": gpu, "uuid": f"GPU-{node}-{gpu}"}, "value": [1.7e9, v]}
        for (node, gpu), v in values.items()
    ]


def test_a_gpu_a_running_job_holds_and_never_used_is_reported():
    jobs = slurm.running_gpu_jobs((FIXTURES / "scontrol-d-show-job-gpus.txt").read_text())
    for job in jobs:
        job["runtime_s"] = 3600
    answer = {("slurm-gpu1", "0"): "0.97", ("slurm-gpu2", "0"): "0", ("slurm-gpu2", "1"): "0.4"}
    record = slurm.idle_gpus(jobs, slurm.gpu_busy(busy(answer)), 30)
    assert (record.status, record.code, record.value) == ("warn", "GPU_IDLE_IN_JOB", 1)
    assert record.message == (
        "1 GPU(s) held by running jobs did nothing in the last 30 min: job 7 train (root) on slurm-gpu2 GPU 0"
    )
    answer[("slurm-gpu2", "0")] = "0.01"
    record = slurm.idle_gpus(jobs, slurm.gpu_busy(busy(answer)), 30)
    assert (record.status, record.message) == ("pass", "3 GPU(s) in 2 running job(s) busy within the last 30 min")


def test_young_jobs_missing_series_and_no_prometheus_are_not_called_idle():
    jobs = slurm.running_gpu_jobs((FIXTURES / "scontrol-d-show-job-gpus.txt").read_text())
    assert slurm.idle_gpus(jobs, {}, 30).status == "n/a"  # both started seconds ago
    jobs[0]["runtime_s"] = 3600
    record = slurm.idle_gpus(jobs, slurm.gpu_busy(busy({("slurm-gpu1", "0"): "0.5"})), 30)
    assert (record.status, record.message) == (
        "pass",
        "1 GPU(s) in 1 running job(s) busy within the last 30 min; no utilization for slurm-gpu2 GPU 0; "
        "1 job(s) younger than 30 min not judged",
    )
    assert slurm.idle_gpus(jobs, {}, 30).status == "unavailable"
    refused = slurm.idle_gpus(jobs, "Status code was -1: Connection refused", 30)
    assert (refused.status, refused.message) == (
        "unavailable",
        "GPU utilization could not be read from Prometheus: Status code was -1: Connection refused",
    )
    assert slurm.idle_gpus([], {}, 30).status == "n/a"
    with pytest.raises(slurm.SlurmParseError):
        slurm.gpu_busy({"status": "error"})
