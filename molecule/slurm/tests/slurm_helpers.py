"""What the Slurm scenario's test files share: waiting, node state, and GPU stand-ins."""

import shlex
from pathlib import Path

SCENARIO = Path(__file__).resolve().parents[1]
ROOT = SCENARIO.parents[1]


def as_user(ctl, user, command, check=True):
    # From /, whatever the connection's directory (over SSH root's home, which the user cannot enter): sbatch
    # makes the directory it was run from the job's, and slurmstepd would write its complaint into the output.
    cmd = f"cd / && runuser -u {user} -- {command}"
    return ctl.check_output(cmd) if check else ctl.run(cmd)


def node_state(ctl, name):
    """(State, Reason) of a node; Reason is last on scontrol's line and may hold spaces."""
    line = ctl.check_output(f"scontrol -o show node {name}")
    state = line.split(" State=", 1)[1].split(" ", 1)[0]
    reason = line.split(" Reason=", 1)[1] if " Reason=" in line else ""
    return state, reason


# Test stand-in: nvidia-smi answering from /usr/local/share/gpulab-query.csv (see the script).
FAKE_SMI = (ROOT / "tests/stand_ins/nvidia-smi-query.sh").read_text()
# Two healthy GeForce GPUs as nvidia-smi reports them (no ECC: n/a, which passes).
TWO_GPUS = (ROOT / "tests/unit/fixtures/nvidia_smi/query_rtx4090_550.csv").read_text()


def fake_gpus(host, csv):
    """Give a compute node (declared with 2 GPUs) a stand-in nvidia-smi that reports the GPUs of csv."""
    host.check_output(f"printf %s {shlex.quote(csv)} > /usr/local/share/gpulab-query.csv")
    # Into place in one rename: the node check must never see a half-written nvidia-smi.
    tmp = "/usr/local/bin/.nvidia-smi.new"
    host.check_output(
        f"printf %s {shlex.quote(FAKE_SMI)} > {tmp} && chmod 755 {tmp} && mv {tmp} /usr/local/bin/nvidia-smi"
    )
