"""gpulab-stage (the training role's dataset staging): a copy is made once, kept while current,
made again when the source changes, shared by jobs starting together, and cleaned by age and size."""

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

STAGE = Path(__file__).resolve().parents[2] / "roles/training/files/gpulab-stage"


@pytest.fixture
def tiers(tmp_path):
    l2, l1 = tmp_path / "cephfs/datasets", tmp_path / "scratch/datasets"
    shards = l2 / "shards"
    shards.mkdir(parents=True)
    for n in range(4):
        (shards / f"train-{n:04d}.tar").write_bytes(os.urandom(256 * 1024))
    (shards / "meta").mkdir()
    (shards / "meta/classes.txt").write_text("cat\ndog\n")
    env = dict(os.environ, GPULAB_DATASETS=str(l2), GPULAB_STAGE_DIR=str(l1))
    return l2, l1, env


def run(env, *args, **extra):
    return subprocess.run(
        [sys.executable, str(STAGE), *args],
        env=dict(env, **extra),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def digests(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def test_a_dataset_is_copied_once_then_found_current(tiers):
    l2, l1, env = tiers
    first = run(env, "shards")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == str(l1 / "shards")
    assert "copied shards (5 files, 1.0 MB)" in first.stderr
    assert digests(l1 / "shards") == digests(l2 / "shards")
    inode = (l1 / "shards/train-0000.tar").stat().st_ino
    second = run(env, "shards")
    assert second.returncode == 0 and second.stdout == first.stdout
    assert "shards is current" in second.stderr and "copied shards" not in second.stderr
    assert (l1 / "shards/train-0000.tar").stat().st_ino == inode  # not copied again


def test_a_changed_source_is_copied_again(tiers):
    l2, l1, env = tiers
    assert run(env, "shards").returncode == 0
    (l2 / "shards/train-0001.tar").write_bytes(b"new contents")
    (l2 / "shards/meta/classes.txt").unlink()
    again = run(env, "shards")
    assert "copied shards (4 files" in again.stderr, again.stderr
    assert digests(l1 / "shards") == digests(l2 / "shards")


def test_a_single_file_dataset_is_staged(tiers):
    l2, l1, env = tiers
    (l2 / "digits.npz").write_bytes(b"x" * 1000)
    assert run(env, "digits.npz").stdout.strip() == str(l1 / "digits.npz")
    assert (l1 / "digits.npz").read_bytes() == b"x" * 1000
    assert "is current" in run(env, "digits.npz").stderr


def test_jobs_starting_together_make_one_intact_copy(tiers):
    l2, l1, env = tiers
    big = l2 / "shards/big.bin"
    big.write_bytes(os.urandom(32 * 1024 * 1024))  # long enough a copy for the others to queue behind it
    jobs = [
        subprocess.Popen(
            [sys.executable, str(STAGE), "shards"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _job in range(4)
    ]
    results = [job.communicate(timeout=120) + (job.returncode,) for job in jobs]
    assert [rc for _out, _err, rc in results] == [0] * 4, results
    assert sum("copied shards" in err for _out, err, _rc in results) == 1, results
    assert sum("shards is current" in err for _out, err, _rc in results) == 3
    assert digests(l1 / "shards") == digests(l2 / "shards")
    assert sorted(p.name for p in l1.iterdir()) == [".shards.lock", "shards", "shards.gpulab-staged"]


def test_a_missing_dataset_fails_naming_its_path(tiers):
    l2, l1, env = tiers
    for args in (["imagenet"], ["--check", "imagenet"]):
        result = run(env, *args)
        assert result.returncode == 2
        assert result.stderr.strip() == f"gpulab-stage: dataset {l2 / 'imagenet'} does not exist"
    assert not l1.exists()  # nothing made on the node
    assert run(env, "--check", "shards").returncode == 0


@pytest.mark.parametrize("name", ["../etc", "a/b", ".hidden", ""])
def test_a_name_outside_the_dataset_root_is_refused(tiers, name):
    result = run(tiers[2], name)
    assert result.returncode == 2 and "must be one directory or file name under" in result.stderr


def test_unset_roots_are_named(tmp_path):
    if Path("/etc/gpulab/training.env").exists():
        pytest.skip("this machine has a training.env")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_")}
    result = run(env, "shards")
    assert result.returncode == 2
    assert "GPULAB_DATASETS and GPULAB_STAGE_DIR unset" in result.stderr


def test_clean_drops_copies_unused_for_the_maximum_age(tiers):
    l2, l1, env = tiers
    (l2 / "old").mkdir()
    (l2 / "old/a").write_bytes(b"a" * 100)
    assert run(env, "old").returncode == 0 and run(env, "shards").returncode == 0
    long_ago = time.time() - 15 * 86400
    os.utime(l1 / "old.gpulab-staged", (long_ago, long_ago))
    result = run(env, "--clean", GPULAB_STAGE_MAX_AGE_DAYS="14")
    assert result.returncode == 0 and "removed old (unused since" in result.stdout
    assert not (l1 / "old").exists() and not (l1 / "old.gpulab-staged").exists()
    assert digests(l1 / "shards") == digests(l2 / "shards")


def test_clean_drops_the_least_recently_used_beyond_the_size_cap(tiers):
    l2, l1, env = tiers
    for name, age in (("a", 300), ("b", 200), ("c", 100)):
        (l2 / name).mkdir()
        (l2 / name / "data").write_bytes(b"x" * 400_000)
        assert run(env, name).returncode == 0
        used = time.time() - age
        os.utime(l1 / f"{name}.gpulab-staged", (used, used))
    result = run(env, "--clean", GPULAB_STAGE_MAX_GB="0.001")  # 1 MB: room for two of the three
    assert result.stdout.splitlines() == ["gpulab-stage: removed a (over the size cap)"]
    assert sorted(p.name for p in l1.iterdir() if not p.name.startswith(".")) == [
        "b",
        "b.gpulab-staged",
        "c",
        "c.gpulab-staged",
    ]


def test_clean_removes_what_a_killed_copy_left(tiers):
    _l2, l1, env = tiers
    l1.mkdir(parents=True)
    leftover = l1 / ".shards.partial-999999999"  # no such process
    leftover.mkdir()
    (leftover / "half").write_bytes(b"h")
    assert run(env, "--clean").returncode == 0
    assert not leftover.exists()


def test_clean_keeps_a_copy_a_running_slurm_job_uses_and_drops_it_once_the_job_is_gone(tiers, tmp_path):
    l2, l1, env = tiers
    assert run(env, "shards", SLURM_JOB_ID="77").returncode == 0
    long_ago = time.time() - 15 * 86400
    os.utime(l1 / "shards.gpulab-staged", (long_ago, long_ago))
    # squeue as Slurm answers: the job ids it still runs, or "Invalid job id" (exit 1) once all are gone.
    bin_dir, running = tmp_path / "bin", tmp_path / "running"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(
        f"#!/bin/sh\n[ -s {running} ] && cat {running} && exit 0\n"
        'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1\n'
    )
    (bin_dir / "squeue").chmod(0o755)
    env = dict(env, PATH=f"{bin_dir}:{env['PATH']}", GPULAB_STAGE_MAX_AGE_DAYS="14")
    running.write_text("77\n")
    kept = run(env, "--clean")
    assert kept.returncode == 0 and kept.stdout.strip() == "gpulab-stage: kept shards: Slurm job(s) 77 still use it"
    assert digests(l1 / "shards") == digests(l2 / "shards")
    running.write_text("")
    dropped = run(env, "--clean")
    assert dropped.returncode == 0 and "removed shards (unused since" in dropped.stdout
    assert sorted(p.name for p in l1.iterdir()) == [".shards.lock"]
