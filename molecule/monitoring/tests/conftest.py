"""Shared by the monitoring scenario's tests: the pynvml stand-in on mon-gpu1, and Prometheus's answers."""

import json
import os
import shlex
from pathlib import Path

import pytest

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
PREFIX = "/opt/gpulab/monitoring"
# Runs on mon-mgmt: each PromQL expression of argv[1] (a JSON list) -> the result Prometheus gives.
QUERY = """
import json, sys, urllib.parse, urllib.request
answers = {}
for expr in json.loads(sys.argv[1]):
    url = "http://localhost:9090/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    answers[expr] = json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
print(json.dumps(answers))
"""


@pytest.fixture(scope="module")
def prometheus(scenario_host):
    """prometheus(*exprs) -> {expr: Prometheus's result for it (a list of samples)}, asked on mon-mgmt."""
    mgmt = scenario_host("mon-mgmt")

    def ask(*exprs):
        return json.loads(mgmt.check_output(f"python3 -c {shlex.quote(QUERY)} {shlex.quote(json.dumps(exprs))}"))

    return ask


@pytest.fixture(scope="module")
def stand_in(scenario_host):
    """mon-gpu1's collector fed by the pynvml stand-in (two GPUs); handed back: (the host, edit(change))."""
    gpu1 = scenario_host("mon-gpu1")
    site = gpu1.check_output(f"{PREFIX}/bin/python3 -c 'import pynvml, os; print(os.path.dirname(pynvml.__file__))'")
    gpu1.check_output(f"cp {site}/pynvml.py /root/pynvml.real.py")
    stand_in_code = (ROOT / "tests/stand_ins/pynvml.py").read_text()
    gpu1.check_output(f"printf %s {shlex.quote(stand_in_code)} > {site}/pynvml.py")
    state = json.loads((ROOT / "tests/stand_ins/nvml-two-gpus.json").read_text())
    dropin = "/etc/systemd/system/gpulab-gpu-metrics.service.d"
    gpu1.check_output(
        f"mkdir -p {dropin} && printf '[Service]\\nEnvironment=GPULAB_NVML_STAND_IN=/root/nvml.json\\n'"
        f" > {dropin}/stand-in.conf && systemctl daemon-reload"
    )

    def edit(change=lambda s: None):
        change(state)
        new = shlex.quote(json.dumps(state))
        gpu1.check_output(f"printf %s {new} > /root/nvml.json.new && mv /root/nvml.json.new /root/nvml.json")

    edit()
    yield gpu1, edit
    gpu1.check_output(
        f"mv /root/pynvml.real.py {site}/pynvml.py && rm -rf {dropin} /root/nvml.json && systemctl daemon-reload"
    )
