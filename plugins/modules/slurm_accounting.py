#!/usr/bin/python
"""Make Slurm's accounting database hold the configured cluster, QOS, accounts and user associations."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_accounting
short_description: Add the cluster, QOS, accounts and user associations to Slurm accounting
description:
  - Reads what C(sacctmgr) has and adds what is missing - the cluster, each QOS, each account with its
    fair-share value, each user's association with an account - and corrects changed fair-share values.
  - Never removes an account, user or QOS (that can cancel running jobs); do it with C(sacctmgr) by hand.
  - Run it on the node that can reach slurmdbd (the management node).
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  cluster:
    description: The cluster name, as C(ClusterName) in slurm.conf.
    type: str
    required: true
  accounts:
    description: Accounts, each C({name, description, organization, fairshare, qos, users}).
    type: list
    elements: dict
    default: []
  qos:
    description:
      - Quality-of-service levels, each C({name, priority, preempt, preempt_mode, grace_time, max_wall,
        max_tres_per_user}); only the keys an entry gives are set, and changed where C(sacctmgr) shows otherwise.
      - C(preempt) lists the QOS this one may preempt; C(grace_time) is in seconds; C(max_wall) a Slurm time.
    type: list
    elements: dict
    default: []
  root_qos:
    description:
      - QOS added to the cluster's root association, so that every account that names no QOS list of its own,
        and root, may submit in them (the preemption tiers).
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: Reports the sacctmgr commands it would run, and runs none.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Accounts for two groups sharing the cluster evenly
  gpulab.cluster.slurm_accounting:
    cluster: gpulab
    accounts:
      - {name: vision, fairshare: 1, users: [alice]}
      - {name: nlp, fairshare: 1, users: [bob]}

- name: Preemption tiers every account may use
  gpulab.cluster.slurm_accounting:
    cluster: gpulab
    qos:
      - {name: scavenger, priority: 0, preempt_mode: requeue, grace_time: 120}
      - {name: interactive, priority: 1000, preempt: [scavenger], max_wall: "04:00:00"}
    root_qos: [scavenger, interactive]
"""

RETURN = r"""
commands:
  description: The sacctmgr commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: list
  sample: [[add, account, vision, Cluster=gpulab, Description=vision, Fairshare=1, Organization=vision]]
"""

from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import slurm


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            accounts=dict(type="list", elements="dict", default=[]),
            qos=dict(type="list", elements="dict", default=[]),
            root_qos=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for kind in ("accounts", "qos"):
        unnamed = [i for i, item in enumerate(p[kind]) if not item.get("name")]
        if unnamed:
            module.fail_json(msg=f"{kind} entries {unnamed} have no name")
    sacctmgr = module.get_bin_path("sacctmgr", required=True)

    questions = [
        ("cluster", "format=Cluster"),
        ("association", f"cluster={p['cluster']}", "format=Account,User,Fairshare,QOS"),
        ("qos", "format=" + ",".join(slurm.QOS_FIELDS)),
    ]
    # At once: each is a round trip to slurmdbd that costs time, not CPU.
    with ThreadPoolExecutor(len(questions)) as pool:
        answers = list(
            pool.map(
                lambda args: module.run_command([sacctmgr, "-n", "-P", "show", *args], environ_update={"LC_ALL": "C"}),
                questions,
            )
        )
    for args, (rc, out, err) in zip(questions, answers, strict=True):
        if rc != 0:
            module.fail_json(msg=f"sacctmgr show {args[0]} failed (is slurmdbd running?): {err.strip() or out.strip()}")
    try:
        clusters = [r["Cluster"] for r in slurm.parse_parsable(answers[0][1], ["Cluster"])]
        assoc = slurm.parse_parsable(answers[1][1], ["Account", "User", "Fairshare", "QOS"])
        qos = slurm.parse_parsable(answers[2][1], slurm.QOS_FIELDS)
    except slurm.SlurmParseError as exc:
        module.fail_json(msg=f"could not read sacctmgr output: {exc}")
    try:
        commands = slurm.plan(
            p["cluster"],
            clusters,
            p["accounts"],
            p["qos"],
            [row for row in assoc if not row["User"]],
            [row for row in assoc if row["User"]],
            qos,
            p["root_qos"],
        )
    except ValueError as exc:
        module.fail_json(msg=f"qos: {exc}")
    if not module.check_mode:
        for command in commands:
            rc, out, err = module.run_command([sacctmgr, "-i", *command])
            if rc != 0:
                module.fail_json(
                    msg=f"sacctmgr {' '.join(command)} failed: {err.strip() or out.strip()}", commands=commands
                )
    module.exit_json(changed=bool(commands), commands=commands)


if __name__ == "__main__":
    main()
