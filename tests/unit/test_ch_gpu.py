"""gpulab-ch-gpu (the training role's container template, before ch-run): a GPU job's image gets the
node's NVIDIA libraries once per driver version; a job without GPUs is left alone; any failure stops
the job. nvidia-smi and ch-fromhost are stand-ins; the real injection needs a GPU (untested here)."""

import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from role_templates import render

SCRIPT = Path(__file__).resolve().parents[2] / "roles/training/files/gpulab-ch-gpu"

NVIDIA_SMI = """#!/bin/sh
if [ ! -f "$STAND_IN/driver" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
  exit 9
fi
cat "$STAND_IN/driver"
"""
# Records each call with its start and end (to see two nodes never inject at once), then leaves a
# library in the image as the real one would; fails where told to.
CH_FROMHOST = """#!/bin/sh
[ ! -f "$STAND_IN/ch-fromhost-fails" ] || { echo "ch-fromhost: nvidia-container-cli failed" >&2; exit 1; }
echo "start $*" >>"$STAND_IN/calls"
sleep 0.3
mkdir -p "$2/usr/lib/x86_64-linux-gnu" && touch "$2/usr/lib/x86_64-linux-gnu/libcuda.so.$(cat "$STAND_IN/driver")"
echo "end $*" >>"$STAND_IN/calls"
"""


def install_programs(bin_dir, programs):
    for name, text in programs.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)


@pytest.fixture
def node():
    # A world-readable directory (not pytest's tmp_path, private to its user): the unwritable-image
    # case runs the script as nobody.
    root = Path(tempfile.mkdtemp(prefix="gpulab-ch-gpu-"))
    root.chmod(0o755)
    (root / "bin").mkdir()
    install_programs(root / "bin", {"nvidia-smi": NVIDIA_SMI, "ch-fromhost": CH_FROMHOST})
    image = root / "images/busybox"
    (image / "etc").mkdir(parents=True)
    (root / "driver").write_text("550.127.05\n")
    yield root
    shutil.rmtree(root)


def run(node, *, gpus="2", env=None, prefix=()):
    environment = {
        "PATH": f"{node / 'bin'}:/usr/bin:/bin",
        "STAND_IN": str(node),
        "SLURM_GPUS_ON_NODE": gpus,
        **(env or {}),
    }
    return subprocess.run(
        [*prefix, "bash", str(SCRIPT), str(node / "images/busybox")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def calls(node):
    path = node / "calls"
    return path.read_text().splitlines() if path.exists() else []


def marker(node):
    path = node / "images/busybox/etc/gpulab-nvidia-driver"
    return path.read_text().strip() if path.exists() else None


def test_a_job_without_gpus_leaves_the_image_alone(node):
    result = run(node, gpus="0")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert calls(node) == []
    assert marker(node) is None


def test_a_gpu_job_injects_once_per_driver_version(node):
    image = node / "images/busybox"
    first = run(node)
    assert first.returncode == 0, first.stderr
    assert "injecting NVIDIA driver 550.127.05's libraries" in first.stdout
    assert calls(node) == [f"start --nvidia {image}", f"end --nvidia {image}"]
    assert marker(node) == "550.127.05"
    assert (image / "usr/lib/x86_64-linux-gnu/libcuda.so.550.127.05").exists()

    again = run(node)
    assert (again.returncode, again.stdout) == (0, "")
    assert len(calls(node)) == 2

    (node / "driver").write_text("570.86.15\n")  # the driver was upgraded
    upgraded = run(node)
    assert upgraded.returncode == 0, upgraded.stderr
    assert len(calls(node)) == 4
    assert marker(node) == "570.86.15"


def test_visible_devices_alone_count_as_gpus(node):
    result = run(node, gpus="", env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert result.returncode == 0, result.stderr
    assert marker(node) == "550.127.05"


def test_two_nodes_sharing_the_image_inject_it_once(node):
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: run(node), range(2)))
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    assert [line.split()[0] for line in calls(node)] == ["start", "end"]


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("no-ch-fromhost", "ch-fromhost is missing (charliecloud-builders, container_runtime role)"),
        ("no-nvidia-smi", "the job has GPUs here but nvidia-smi is missing"),
        ("driver-unreadable", "nvidia-smi could not read the driver version (in 30 s): NVIDIA-SMI has failed"),
        ("driver-garbled", "nvidia-smi could not read the driver version: No devices were found"),
        ("ch-fromhost-fails", "ch-fromhost --nvidia"),
    ],
)
def test_a_gpu_job_stops_rather_than_run_without_its_gpus(node, breakage, message):
    if breakage == "no-ch-fromhost":
        (node / "bin/ch-fromhost").unlink()
    elif breakage == "no-nvidia-smi":
        (node / "bin/nvidia-smi").unlink()
    elif breakage == "driver-unreadable":
        (node / "driver").unlink()
    elif breakage == "driver-garbled":
        (node / "driver").write_text("No devices were found\n")
    else:
        (node / "ch-fromhost-fails").touch()
    result = run(node)
    assert result.returncode == 1
    assert "gpulab-ch-gpu: " in result.stderr and message in result.stderr
    assert marker(node) is None


def test_an_image_the_user_cannot_write_is_named(node):
    if os.geteuid() == 0:  # root writes anywhere: run the script as nobody
        prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    else:
        prefix = ()
        (node / "images/busybox/etc").chmod(0o555)
    result = run(node, prefix=prefix)
    assert result.returncode == 1
    assert f"image {node / 'images/busybox'} is not writable by" in result.stderr
    assert calls(node) == []


def test_a_missing_image_is_named(node):
    shutil.rmtree(node / "images/busybox")
    result = run(node)
    assert result.returncode == 1
    assert "is not a directory (a Charliecloud directory image)" in result.stderr


TEMPLATE = SCRIPT.parents[1] / "templates/container.sbatch.j2"
# srun as one task on this node: its options dropped, the command run.
SRUN = """#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift; done
exec "$@"
"""
CH_RUN = """#!/bin/sh
echo "ch-run $*" >>"$STAND_IN/calls"
"""


def container_job(node, gpus_per_node):
    """The container job template rendered for a cluster with gpus_per_node GPUs per node, reading
    its settings from the node's stand-in training.env."""
    text = render(TEMPLATE, training_datasets_dir="/mnt/cephfs/datasets", training_gpus_per_node=gpus_per_node)
    (node / "training.env").write_text("GPULAB_DATASETS=/mnt/cephfs/datasets\n")
    job = node / "container.sbatch"
    job.write_text(text.replace("/etc/gpulab/training.env", str(node / "training.env")))
    install_programs(node / "bin", {"srun": SRUN, "ch-run": CH_RUN, "gpulab-ch-gpu": SCRIPT.read_text()})
    return job


def run_job(node, job, gpus):
    return subprocess.run(
        ["sh", str(job)],
        env={
            "PATH": f"{node / 'bin'}:/usr/bin:/bin",
            "STAND_IN": str(node),
            "IMAGE": str(node / "images/busybox"),
            "SLURM_GPUS_ON_NODE": gpus,
            "SLURM_JOB_NUM_NODES": "2",
            "SLURM_JOB_NODELIST": "gpu[1-2]",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_container_job_asks_for_the_gpus_and_injects_before_ch_run(node):
    job = container_job(node, 2)
    assert "#SBATCH --gres=gpu:2\n" in job.read_text()
    result = run_job(node, job, "2")
    assert result.returncode == 0, result.stderr
    image = node / "images/busybox"
    assert [line.split()[0] for line in calls(node)] == ["start", "end", "ch-run"]
    assert calls(node)[-1].startswith(f"ch-run -b /mnt/cephfs:/mnt {image} -- sh -c")


def test_a_container_job_whose_gpus_cannot_be_given_never_runs_the_image(node):
    job = container_job(node, 2)
    (node / "ch-fromhost-fails").touch()
    result = run_job(node, job, "2")
    assert result.returncode == 1
    assert "ch-fromhost --nvidia" in result.stderr
    assert calls(node) == []


def test_the_container_job_on_a_cluster_without_gpus(node):
    job = container_job(node, 0)
    assert "--gres" not in job.read_text()
    result = run_job(node, job, "0")
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in calls(node)] == ["ch-run"]
