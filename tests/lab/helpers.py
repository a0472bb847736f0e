"""What the lab tests share: a command on a node, a PromQL query on mgmt1's Prometheus, a bounded wait, a quick
validate.yml run."""

import json
import os
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


def wait_for(condition, seconds, step=3):
    """condition's first true value within `seconds`, else its last (false) one."""
    deadline = time.monotonic() + seconds
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(step)
    return value


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
