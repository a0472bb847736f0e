"""Preemption in the lab (inventory/lab sets slurm_preemption: true): a two-node DDP digits job in the
scavenger QOS, an interactive job that needs both nodes, and what Slurm and the job then do. The job
template requeues a preempted job once its workers have checkpointed; the requeued job resumes at the
batch where it stopped, so that every planned step is trained exactly once; the ups role's USR1 on the
way does not end it. (A job killed with SIGKILL,
no grace, resuming from its last whole checkpoint: test_training.py.)"""

import json
import re

import pytest
from helpers import STEPS_PER_EPOCH, on, wait_for

WORK = "/mnt/cephfs/lab-preemption"
CHECKPOINTS = "/mnt/cephfs/checkpoints/root"  # the template's default: <checkpoints>/<user>/<job name>
# Each run must still be training when the test acts on it, about a second after its second epoch (or its first
# after resuming): 50 epochs leave some 10 s of training beyond that with the lab alone (0.2 s an epoch).
EPOCHS = 50
SCRIPT = f"/opt/gpulab/jobs/train_digits.py --epochs {EPOCHS}"


def submit(name, *options):
    """gpulab-sbatch ddp on gpu1, not waiting -> (job id, gpulab-sbatch's output)."""
    out = on(
        "gpu1",
        f"cd {WORK} && gpulab-sbatch ddp -J {name} --output {WORK}/{name}.out {' '.join(options)} -- {SCRIPT}",
    )
    return re.search(r"Submitted batch job (\d+)", out).group(1), out


def log(name):
    return on("gpu1", f"cat {WORK}/{name}.out")


def results(output):
    return [json.loads(line.split(" ", 1)[1]) for line in output.splitlines() if line.startswith("GPULAB_RESULT ")]


def runs(job):
    """sacct's record of each run of the job, oldest first: [(state, start, end)]."""
    out = on("gpu1", f"sacct -D -X -n -P -j {job} -o State,Start,End")
    return [tuple(line.split("|")) for line in out.splitlines()]


def epochs_logged(name):
    return len(re.findall(r"^epoch \d+ ", on("gpu1", f"cat {WORK}/{name}.out 2>/dev/null || :"), re.M))


def finished(job):
    return on("gpu1", f"squeue -h -j {job} -o %T 2>/dev/null || :") == ""


@pytest.fixture(scope="module", autouse=True)
def work():
    on("gpu1", f"rm -rf {WORK} {CHECKPOINTS}/preempt-lab && mkdir -p {WORK}")
    yield
    on("gpu1", f"rm -rf {WORK} {CHECKPOINTS}/preempt-lab")


def test_a_scavenger_job_is_preempted_requeued_and_resumes_without_repeating_a_step():
    job, submitted = submit("preempt-lab", "-q", "scavenger")
    assert f"gpulab-sbatch: job {job} runs in QoS scavenger" in submitted
    assert wait_for(lambda: epochs_logged("preempt-lab") >= 2, 120), log("preempt-lab")

    # An interactive job asking for both nodes: it preempts the scavenger job and runs at once.
    hosts = on("gpu1", "srun -q interactive -N2 --exclusive hostname", timeout=120)
    assert sorted(hosts.split()) == ["gpu1", "gpu2"]

    # The ups role's notice that power is on battery, sent to the resumed run: it must not end it.
    assert wait_for(lambda: re.search(r"resumed from step [\s\S]*^epoch ", log("preempt-lab"), re.M), 120)
    on("gpu1", f"scancel --full --signal=USR1 --state=RUNNING {job}")
    assert wait_for(lambda: finished(job), 300), runs(job)
    interactive = on("gpu1", "sacct -X -n -P -q interactive -o JobID,State,Start,End | tail -n 1").split("|")
    output = log("preempt-lab")
    # The first run requeued itself (the template, once the workers had stopped); the second completed.
    assert [run[0] for run in runs(job)] == ["REQUEUED", "COMPLETED"], output
    first, second = runs(job)
    assert interactive[1] == "COMPLETED" and first[2] <= interactive[2] <= interactive[3] <= second[1]
    assert "ddp: preempted; requeued to resume from its checkpoint" in output
    assert "qos scavenger, restart 0" in output and "qos scavenger, restart 1" in output

    stopped, resumed = results(output)
    stop = re.search(r"^stopping at step (\d+) \(epoch (\d+), batch (\d+)\): asked to stop", output, re.M)
    assert stop, output
    step, epoch, batch = (int(x) for x in stop.groups())
    assert stopped["stopped"] and stopped["steps"] == step == (epoch - 1) * STEPS_PER_EPOCH + batch
    done, into = divmod(step, STEPS_PER_EPOCH)  # a stop at an epoch's last batch resumes at the next epoch
    assert f"resumed from step {step} (epoch {done} done, {into} batches into the next)" in output
    assert "restart 1" in output.split("resumed from step", 1)[1].splitlines()[0]
    # Every planned step trained exactly once: the second run starts at the first one's stop, and together
    # they trained the plan.
    assert resumed["resumed_from_step"] == step and resumed["restart_count"] == 1 and not resumed["stopped"]
    assert stopped["trained_steps"] + resumed["trained_steps"] == EPOCHS * STEPS_PER_EPOCH == resumed["steps"]
    assert resumed["reached"] and resumed["final_accuracy"] >= resumed["target_accuracy"]
