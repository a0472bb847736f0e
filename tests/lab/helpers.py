"""What the lab tests share: a command on a node, a PromQL query on mgmt1's Prometheus, a bounded wait, a job
from a template, a playbook run, a quick validate.yml run."""

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Runs on mgmt1: each PromQL expression of argv[1] (a JSON list) -> Prometheus's answer.
QUERY = """
import json, sys, urllib.parse, urllib.request
answers = {}
for expr in json.loads(sys.argv[1]):
    url = "http://localhost:9090/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    answers[expr] = json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
print(json.dumps(answers))
"""


# train_digits.py on 2 ranks: digits' 1437 training images, 719 per rank, in batches of 32.
STEPS_PER_EPOCH = 23
# The step a train_digits.py checkpoint holds (argv[1]), read with the training environment's torch.
READ_STEP = "/opt/gpulab/train/bin/python -c 'import sys, torch; print(torch.load(sys.argv[1])[\"step\"])'"


def on(node, command, timeout=60):
    return subprocess.run(
        ["docker", "exec", node, "sh", "-c", command], check=True, capture_output=True, text=True, timeout=timeout
    ).stdout.strip()


def query(*exprs):
    return json.loads(on("mgmt1", f"python3 -c {shlex.quote(QUERY)} {shlex.quote(json.dumps(exprs))}"))


def wait_for(condition, seconds, step=1):
    """condition's first true value within `seconds`, asked every `step` seconds, else its last (false) one."""
    deadline = time.monotonic() + seconds
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(step)
    return value


def submit(work, name, *args, env="", node="gpu1", job="ddp"):
    """gpulab-sbatch `job` on `node`, its output in `work` (on CephFS), then the job's end, asked every second
    (sbatch --wait asks at doubling intervals up to 32 s); -> (rc: 0 when the job COMPLETED, job output, stderr)."""
    command = f"cd {work} && {env} gpulab-sbatch {job} -J {name} --output {work}/{name}-%j.out " + " ".join(
        shlex.quote(a) for a in args
    )
    run = subprocess.run(["docker", "exec", node, "sh", "-c", command], capture_output=True, text=True, check=False)
    submitted = re.search(r"Submitted batch job (\d+)", run.stdout)
    if not submitted:
        return run.returncode or 1, "", run.stderr
    number = submitted.group(1)
    assert wait_for(lambda: on(node, f"squeue -h -j {number} 2>/dev/null || :") == "", 600)
    state = re.search(r" JobState=(\S+) .* ExitCode=(\S+)", on(node, f"scontrol -o show job {number}"))
    output = on("gpu2", f"cat {work}/{name}-{number}.out")
    return (0 if state.group(1) == "COMPLETED" else 1), output, f"{run.stderr}{state.group(0)}"


def playbook(path, *args, timeout=300):
    """ansible-playbook on the lab (ansible.cfg's inventory), its output uncoloured; -> the finished run."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(
        ["ansible-playbook", path, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def validate(report_dir, *inventories, drain=False, smi_timeout=30):
    """validate.yml without the long steps, its report in report_dir: (the run, report.json, the report's directory).
    With no inventory given, the lab's (ansible.cfg's)."""
    settings = {
        "validation_drain": drain,
        "validation_report_dir": str(report_dir),
        "validation_smi_timeout": smi_timeout,
    }
    cmd = ["ansible-playbook", "playbooks/validate.yml", "--skip-tags", "validate_long", "-e", json.dumps(settings)]
    for inventory in inventories:
        cmd += ["-i", str(inventory)]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    report = json.loads((Path(report_dir) / "latest" / "report.json").read_text())
    return run, report, Path(report_dir) / "latest"
