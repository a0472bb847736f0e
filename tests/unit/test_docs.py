"""The manual holds: every command in README.md and docs/ is run by a test or named as not run (with why),
and the monitoring page's alert table is the rule file's alerts."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)\n(.*?)^```", re.S | re.M)
SHELL = {"sh"}
OTHER = {"yaml", "python", "text"}

# Each command in the manual: (its pattern, the file that runs the same thing, a string that file holds
# where it does). The inventory differs (inventory/mylab in the manual, the lab's or a scenario's in tests).
RUN = [
    (
        r"gpulab-sbatch ray -N 2 -- /opt/gpulab/jobs/tune_digits\.py.*",
        "tests/lab/test_ray.py",
        '"/opt/gpulab/jobs/tune_digits.py"',
    ),
    (r"ray status --address mgmt1:6379", "tests/lab/test_ray.py", "bin/ray status --address"),
    (r"gpulab-sbatch ddp -q scavenger .*", "tests/lab/test_preemption.py", '"-q", "scavenger"'),
    (
        r"srun -q interactive -N 2 --exclusive hostname",
        "tests/lab/test_preemption.py",
        "srun -q interactive -N2 --exclusive",
    ),
    (r"sacct -D -X -j JOB .*", "tests/lab/test_preemption.py", "sacct -D -X -n -P -j"),
    (r"make lab", "Makefile", "scripts/lab.sh --fresh"),  # make test-lab: the same script, from scratch
    (r"make test", ".ci/run", "make test"),
    (r"ansible-playbook -i inventory/example playbooks/plan\.yml", "tests/playbooks/test_plan.py", '"example"'),
    (r"ansible-playbook playbooks/plan\.yml -e @my-plan\.yml", "tests/playbooks/test_plan.py", '"-e", f"@'),
    (r"ansible-playbook -i inventory/mylab site\.yml", "scripts/lab.sh", "site.yml"),
    (
        r"ansible-playbook -i inventory/mylab playbooks/gpu_stack\.yml --tags nccl",
        "tests/lab/test_tagged_runs.py",
        '("gpu_stack", "nccl")',
    ),
    (r"ansible-playbook -i inventory/mylab playbooks/network\.yml", "molecule/network/molecule.yml", "network.yml"),
    (r"ansible-playbook -i inventory/mylab playbooks/storage\.yml", "molecule/ceph/molecule.yml", "storage.yml"),
    (
        r"ansible-playbook -i inventory/mylab playbooks/storage\.yml --tags ceph_client --limit gpu4",
        "molecule/ceph/tests/test_ceph.py",
        '"--tags", "ceph_client", "--limit"',
    ),
    (
        r"ansible-playbook -i inventory/mylab playbooks/monitoring\.yml",
        "molecule/monitoring/molecule.yml",
        "monitoring.yml",
    ),
    (r"ansible-playbook -i inventory/mylab playbooks/upgrade\.yml", "molecule/slurm/tests/test_upgrade.py", "upgrade"),
    (
        r"ansible-playbook -i inventory/mylab playbooks/upgrade\.yml --check",
        "molecule/slurm/tests/test_upgrade.py",
        'upgrade(ansible_playbook, "--check")',
    ),
    (
        r"ansible-playbook -i inventory/mylab playbooks/upgrade\.yml --tags nvidia_driver",
        "molecule/slurm/tests/test_upgrade_pins.py",
        '"playbooks/upgrade.yml", "--tags", "nvidia_driver"',
    ),
    # The upgrade role's plan and apply steps with --tags reboot, on VMs that really reboot (no Slurm there).
    (
        r"ansible-playbook -i inventory/mylab playbooks/upgrade\.yml --tags reboot",
        "molecule/kernel/tests/test_kernel.py",
        '"molecule/kernel/reboot.yml", "--tags", "reboot"',
    ),
    (r"ansible-playbook -i inventory/mylab playbooks/validate\.yml", "playbooks/site.yml", "validate.yml"),
    (
        r"ansible-playbook -i inventory/mylab playbooks/validate\.yml --skip-tags validate_long",
        "tests/lab/helpers.py",
        '"playbooks/validate.yml", "--skip-tags", "validate_long"',
    ),
    (
        r"ansible-playbook -i inventory/mylab playbooks/doctor\.yml -e doctor_accept=true",
        "tests/playbooks/test_doctor_flow.py",
        "doctor_accept",
    ),
    (r"ansible-playbook -i inventory/mylab playbooks/doctor\.yml", "tests/lab/test_doctor.py", "playbooks/doctor.yml"),
    (r"make doctor ARGS='-e doctor_accept=true'", "Makefile", "ansible-playbook playbooks/doctor.yml $(ARGS)"),
    (
        r"ansible-runner run runner --project-dir \. --inventory inventory/mylab -p site\.yml",
        "tests/lab/test_tagged_runs.py",
        'private_data_dir=str(ROOT / "runner")',
    ),
    (
        r"ansible-runner run runner .* --process-isolation --process-isolation-executable docker "
        r"--container-image gpulab/ee:0\.1\.0",
        "tests/ee/test_ee.py",
        'process_isolation_executable="docker"',
    ),
    (r"\. /opt/gpulab/train/bin/activate", "roles/training/templates/job.sbatch.j2", "/bin/activate"),
    (
        r"DATASET=digits gpulab-sbatch ddp -N 2 -- /opt/gpulab/jobs/train_digits\.py.*",
        "tests/lab/test_training.py",
        "DATASET={DATASET} gpulab-sbatch ddp -J ddp-lab -N2",
    ),
    (
        r"gpulab-sbatch deepspeed -N 2 -- /opt/gpulab/jobs/train_zero2\.py --steps 40",
        "tests/lab/test_training.py",
        '"/opt/gpulab/jobs/train_zero2.py", "--steps", "40", job="deepspeed"',
    ),
    (
        r"IMAGE=/mnt/cephfs/images/gpulab-busybox gpulab-sbatch container -N 2 -- sh -c hostname",
        "tests/lab/test_training.py",
        'job="container"',
    ),
]
# Commands no test runs, each with why.
NOT_RUN = {
    r"cp -r inventory/example inventory/mylab": "a copy; the example inventory itself is read by test_plan.py",
    r"\$EDITOR .*": "the operator's editor",
    r"xdg-open reports/latest/report\.html": "a desktop; the lab's tests open the page in headless Chromium",
    r"\.venv/bin/pip install 'mitogen==0\.3\.54'": "opt-in; scripts/rerun-bench.sh installs and times it by hand",
    r"export ANSIBLE_STRATEGY_PLUGINS=.*": "opt-in; scripts/rerun-bench.sh sets it by hand",
    r"ANSIBLE_STRATEGY=mitogen_linear ansible-playbook -i inventory/mylab site\.yml": "opt-in, as above",
}


def commands():
    """(page, command) for each line of each ```sh block: continuations joined, comments dropped."""
    found = []
    for page in PAGES:
        for lang, body in FENCE.findall(page.read_text()):
            if lang not in SHELL:
                continue
            for line in body.replace("\\\n", " ").splitlines():
                line = re.sub(r"\s+#.*$", "", line).strip()
                if line and not line.startswith("#"):
                    found.append((page.relative_to(ROOT).as_posix(), " ".join(line.split())))
    return found


def test_every_block_says_what_it_holds():
    unlabelled = [
        (page.name, lang or "(none)")
        for page in PAGES
        for lang, _body in FENCE.findall(page.read_text())
        if lang not in SHELL | OTHER
    ]
    assert unlabelled == [], "a fenced block needs one of " + ", ".join(sorted(SHELL | OTHER))


def test_every_command_is_run_by_a_test_or_said_not_to_be():
    found = commands()
    assert len(found) > 30  # the extraction still finds them
    patterns = [pattern for pattern, _file, _needle in RUN] + list(NOT_RUN)
    uncovered = [(page, cmd) for page, cmd in found if not any(re.fullmatch(p, cmd) for p in patterns)]
    assert uncovered == [], "commands in the manual that no test runs: add the test, or to NOT_RUN with why"
    unused = [p for p in patterns if not any(re.fullmatch(p, cmd) for _page, cmd in found)]
    assert unused == [], "entries for commands the manual no longer has"


@pytest.mark.parametrize("pattern, path, needle", RUN, ids=[entry[0][:60] for entry in RUN])
def test_the_test_named_for_a_command_runs_it(pattern, path, needle):
    assert needle in (ROOT / path).read_text(), f"{path} no longer holds {needle!r}, which runs {pattern}"


def test_the_alert_table_is_the_rule_file():
    rules = yaml.safe_load((ROOT / "roles/monitoring/files/gpulab.rules.yml").read_text())
    alerts = [rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule]
    page = (ROOT / "docs/monitoring.md").read_text()
    listed = re.findall(r"^\| `(\w+)` \|", page, re.M)
    assert len(alerts) == 18
    assert listed == alerts
