"""Training in the lab (torch on the CPU, gloo): the pinned environment on both compute nodes, the ddp
template as real sbatch jobs across gpu1 and gpu2 (checkpoints on CephFS, a resume after SIGKILL, staged data),
and the staging helper under two jobs at once. The digits smoke benchmark on 1 and 2 nodes is the
validation run's own (gpulab-sbatch, the same template and script): test_validate_report reads its figures."""

import json
import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import helpers
import pytest
import yaml
from helpers import READ_STEP, STEPS_PER_EPOCH, on, playbook, wait_for

ROOT = Path(__file__).resolve().parents[2]
WORK = "/mnt/cephfs/lab-training"  # job output and checkpoints of these tests, on CephFS
DATASET = "digits-lab"
STAGED = f"/var/tmp/gpulab/datasets/{DATASET}"
CHECKPOINTS = "/mnt/cephfs/checkpoints/root/ddp-lab"  # the template's default: <checkpoints>/<user>/<job name>
ZERO2_CHECKPOINTS = "/mnt/cephfs/checkpoints/root/zero2-lab"
EPOCHS = 30
EXPORT_DIGITS = (
    "import numpy as np, sys; from sklearn.datasets import load_digits; d = load_digits(); "
    "np.savez(sys.argv[1], x=d.data, y=d.target)"
)


def submit(name, *args, env="", node="gpu1", job="ddp"):
    return helpers.submit(WORK, name, *args, env=env, node=node, job=job)


def result(output):
    return json.loads(output.split("GPULAB_RESULT ", 1)[1].splitlines()[0])


def losses(output):
    return [float(x) for x in re.findall(r"^epoch \d+ step \d+ loss (\S+)", output, re.M)]


@pytest.fixture(scope="module")
def shared():
    on(
        "gpu1",
        f"rm -rf {WORK} {CHECKPOINTS} {ZERO2_CHECKPOINTS} /mnt/cephfs/datasets/{DATASET} "
        f"&& mkdir -p {WORK} /mnt/cephfs/datasets/{DATASET}",
    )
    on(
        "gpu1",
        f"/opt/gpulab/train/bin/python -c {shlex.quote(EXPORT_DIGITS)} /mnt/cephfs/datasets/{DATASET}/digits.npz",
    )
    for node in ("gpu1", "gpu2"):
        on(node, f"rm -rf {STAGED} {STAGED}.gpulab-staged")
    yield
    on("gpu1", f"rm -rf {WORK} {CHECKPOINTS} {ZERO2_CHECKPOINTS} /mnt/cephfs/datasets/{DATASET}")


def test_the_environment_holds_the_pins_on_both_nodes():
    read = (
        "/opt/gpulab/train/bin/python -c 'import json, torch, webdataset, sklearn, deepspeed; "
        "from importlib.metadata import version; "
        'print(json.dumps({p: version(p) for p in ("torch", "deepspeed", "webdataset", "scikit-learn")}))\''
    )
    found = {node: json.loads(on(node, read).splitlines()[-1]) for node in ("gpu1", "gpu2")}  # after deepspeed's banner
    assert found["gpu1"] == found["gpu2"], found
    versions = yaml.safe_load((ROOT / "roles/training/defaults/main.yml").read_text())["training_versions"]
    pins = {key: re.search(r"default\('([^']+)'\)", value).group(1) for key, value in versions.items()}
    assert found["gpu1"] == {
        "torch": pins["pytorch"] + "+cpu",  # the CPU wheel from the build machine
        "deepspeed": pins["deepspeed"],
        "webdataset": pins["webdataset"],
        "scikit-learn": pins["scikit-learn"],
    }


def test_a_two_node_ddp_job_trains_on_staged_data_and_resumes_after_sigkill_from_its_last_whole_checkpoint(shared):
    script = f"/opt/gpulab/jobs/train_digits.py --epochs {EPOCHS}"
    submitted = on(
        "gpu1",
        f"cd {WORK} && DATASET={DATASET} gpulab-sbatch ddp -J ddp-lab -N2 --output {WORK}/ddp-lab-%j.out -- {script}",
    )
    job = re.search(r"Submitted batch job (\d+)", submitted).group(1)

    def output():
        return on("gpu2", f"cat {WORK}/ddp-lab-{job}.out 2>/dev/null || :")

    assert wait_for(lambda: len(losses(output())) >= 3, 120), output()
    # SIGKILL to every worker at once, no grace (scancel would send SIGTERM first, as the job's steps end).
    for node in ("gpu1", "gpu2"):
        on(node, "pkill -KILL -f '/opt/gpulab/jobs/[t]rain_digits.py'")
    assert wait_for(lambda: on("gpu1", f"squeue -h -j {job} 2>/dev/null || :") == "", 60)
    first = output()
    assert "ranks 2 on nodes gpu1,gpu2 (cpu, gloo)" in first
    falling = losses(first)[:3]
    assert falling[0] > falling[1] > falling[2], first
    assert first.count(f"copied {DATASET} (1 files") == 2  # staged on each node
    printed = int(re.findall(r"^checkpoint step (\d+) saved to " + CHECKPOINTS + "/latest.pt$", first, re.M)[-1])
    # The last whole checkpoint: the one printed, or the next if the kill came between its rename and the print.
    whole = int(on("gpu2", f"{READ_STEP} {CHECKPOINTS}/latest.pt").splitlines()[-1])
    assert whole in (printed, printed + STEPS_PER_EPOCH), (whole, printed)
    # What a save cut short by SIGKILL leaves: the next checkpoint half written, beside the whole one.
    saved = f"{CHECKPOINTS}/latest.pt"
    on("gpu1", f"head -c $(( $(stat -c %s {saved}) / 2 )) {saved} > {CHECKPOINTS}/latest.partial")
    staged = {
        node: on(node, f"stat -c %i {STAGED}/digits.npz; sha256sum < {STAGED}/digits.npz") for node in ("gpu1", "gpu2")
    }
    source = on("gpu1", f"sha256sum < /mnt/cephfs/datasets/{DATASET}/digits.npz")
    assert all(s.splitlines()[1] == source for s in staged.values())

    # The same job name finds its checkpoints: the second job resumes at the last whole one and trains the rest.
    rc, second, err = submit("ddp-lab", "-N2", "--", *script.split(), env=f"DATASET={DATASET}")
    assert rc == 0, second + err
    done = whole // STEPS_PER_EPOCH
    assert f"resumed from step {whole} (epoch {done} done, 0 batches into the next)" in second
    figures = result(second)
    assert figures["resumed_from_step"] == whole and figures["steps"] == EPOCHS * STEPS_PER_EPOCH
    assert figures["trained_steps"] == EPOCHS * STEPS_PER_EPOCH - whole
    assert len(losses(second)) == EPOCHS - done  # the epochs after the checkpoint only
    assert second.count(f"{DATASET} is current") == 2 and "copied" not in second  # not staged again
    assert {
        node: on(node, f"stat -c %i {STAGED}/digits.npz; sha256sum < {STAGED}/digits.npz") for node in staged
    } == staged


def test_a_two_node_deepspeed_zero2_offload_job_compiles_nothing_at_job_time_and_resumes(shared):
    on("gpu1", "rm -rf /root/.cache/torch_extensions")
    on("gpu2", "rm -rf /root/.cache/torch_extensions")
    rc, output, err = submit(
        "zero2-lab", "-N2", "--", "/opt/gpulab/jobs/train_zero2.py", "--steps", "40", job="deepspeed"
    )
    assert rc == 0, output + err
    figures = result(output)
    assert (figures["world_size"], figures["nodes"], figures["zero_stage"]) == (2, ["gpu1", "gpu2"], 2), figures
    assert (figures["offload"], figures["cpu_adam_prebuilt"], figures["accelerator"]) == (
        "DeepSpeedCPUAdam",
        True,
        "cpu",
    )
    assert figures["last_loss"] < figures["first_loss"] / 2, figures
    # DeepSpeed compiles a missing op into torch_extensions with ninja at its first use: none was.
    assert "ninja" not in output and "Building extension" not in output
    for node in ("gpu1", "gpu2"):
        assert on(node, "test -e /root/.cache/torch_extensions && echo compiled || echo none") == "none"

    # Its checkpoints (DeepSpeed's format, every 20 steps): a later job of the same name goes on from step 40.
    assert on("gpu2", f"cat {ZERO2_CHECKPOINTS}/latest") == "step40"
    rc, output, err = submit(
        "zero2-lab", "-N2", "--", "/opt/gpulab/jobs/train_zero2.py", "--steps", "60", job="deepspeed"
    )
    assert rc == 0, output + err
    assert f"resumed from step 40 of {ZERO2_CHECKPOINTS}, restart 0" in output
    figures = result(output)
    assert (figures["resumed_from_step"], figures["trained_steps"], figures["steps"]) == (40, 20, 60), figures
    assert on("gpu2", f"cat {ZERO2_CHECKPOINTS}/latest") == "step60"
    assert on("gpu2", f"cd {ZERO2_CHECKPOINTS} && ls -d step*") == "step60"  # the older ones removed


IMAGE = "/mnt/cephfs/images/gpulab-busybox"
# A directory image as ch-run takes it: Debian's static busybox, the mount points ch-run binds.
MAKE_IMAGE = f"""set -e; work=$(mktemp -d); cd "$work"; apt-get download -q busybox-static >/dev/null
dpkg-deb -x busybox-static_*.deb x; rm -rf {IMAGE}
mkdir -p {IMAGE}/bin {IMAGE}/etc {IMAGE}/dev {IMAGE}/proc {IMAGE}/sys {IMAGE}/tmp {IMAGE}/home {IMAGE}/mnt
cp x/bin/busybox {IMAGE}/bin/; for a in sh cat hostname; do ln -s busybox {IMAGE}/bin/$a; done
touch {IMAGE}/etc/passwd {IMAGE}/etc/group {IMAGE}/etc/hosts {IMAGE}/etc/resolv.conf
echo 'PRETTY_NAME="gpulab busybox test image"' > {IMAGE}/etc/os-release; rm -rf "$work"
"""


def test_a_job_in_a_charliecloud_image_runs_on_both_nodes(shared):
    on("gpu1", MAKE_IMAGE, timeout=120)
    on("gpu1", f"echo seen-through-cephfs > {WORK}/marker")
    try:
        show = '. /etc/os-release; echo "$(hostname) | $PRETTY_NAME | $(cat /mnt/lab-training/marker)"'
        rc, output, err = submit("container-lab", "-N2", "--", "sh", "-c", show, env=f"IMAGE={IMAGE}", job="container")
        assert rc == 0, output + err
        lines = sorted(line for line in output.splitlines() if " | " in line)
        assert lines == [f"{node} | gpulab busybox test image | seen-through-cephfs" for node in ("gpu1", "gpu2")], (
            output
        )
        rc, _output, err = submit("container-missing", env="IMAGE=/mnt/cephfs/images/none", job="container")
        assert rc == 2 and "gpulab-sbatch: image /mnt/cephfs/images/none does not exist" in err
        assert on("gpu1", "sacct -n -X -o JobID --name container-missing") == ""
    finally:
        on("gpu1", "rm -rf /mnt/cephfs/images")


# Two WebDataset shards written on one node; read straight from CephFS (no staging) on the other.
SHARDS = """
import sys, webdataset as wds
root = sys.argv[1]
if sys.argv[2] == "write":
    for shard in range(2):
        with wds.TarWriter(f"{root}/shard-{shard:06d}.tar") as sink:
            for i in range(50):
                n = shard * 50 + i
                sink.write({"__key__": f"sample{n:04d}", "cls": n % 10, "txt": f"digit {n % 10}"})
else:
    urls = f"{root}/shard-{{000000..000001}}.tar"
    samples = list(wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode())
    print(len(samples), sum(s["cls"] for s in samples), samples[7]["txt"])
"""


def test_webdataset_shards_stream_straight_from_cephfs(shared):
    python = f"/opt/gpulab/train/bin/python -c {shlex.quote(SHARDS)} {WORK}"
    on("gpu1", f"{python} write")
    assert on("gpu2", f"{python} read") == "100 450 digit 7"  # 100 samples; classes 0-9 ten times each: 450


def test_two_stagings_started_together_on_one_node_make_one_intact_copy(shared):
    big = f"/mnt/cephfs/datasets/{DATASET}-big"
    on("gpu1", f"mkdir -p {big} && head -c 64M /dev/urandom > {big}/shard-0.tar")
    try:
        with ThreadPoolExecutor(2) as pool:
            runs = list(
                pool.map(
                    lambda _i: subprocess.run(
                        ["docker", "exec", "gpu1", "gpulab-stage", f"{DATASET}-big"],
                        capture_output=True,
                        text=True,
                        timeout=300,
                        check=False,
                    ),
                    range(2),
                )
            )
        assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
        assert sorted("copied" in r.stderr for r in runs) == [False, True], [r.stderr for r in runs]
        source = on("gpu1", f"sha256sum < {big}/shard-0.tar")
        assert on("gpu1", f"sha256sum < /var/tmp/gpulab/datasets/{DATASET}-big/shard-0.tar") == source
        assert on("gpu1", "ls -A /var/tmp/gpulab/datasets | grep -c partial || true") == "0"
    finally:
        on("gpu1", f"rm -rf {big} /var/tmp/gpulab/datasets/{DATASET}-big*")


def test_a_job_given_a_missing_dataset_fails_before_it_is_queued(shared):
    rc, _output, err = submit("ddp-missing", "-N2", env="DATASET=imagenet-missing")
    assert rc == 2
    assert "gpulab-stage: dataset /mnt/cephfs/datasets/imagenet-missing does not exist" in err
    assert on("gpu1", "sacct -n -X -o JobID --name ddp-missing") == ""  # never allocated


def test_a_pin_the_sources_do_not_offer_is_refused_before_anything_is_installed():
    pins = {
        "pytorch": "2.13.0",
        "deepspeed": "0.19.8",
        "webdataset": "0.0.999",
        "scikit-learn": "1.9.1",
        "ray": "2.60.0",
    }
    run = playbook("playbooks/training.yml", "--limit", "gpu1", "-e", json.dumps({"training_versions": pins}))
    assert run.returncode != 0
    assert (
        "Training settings: training_versions.webdataset is 0.0.999, which the configured sources"
        " (wheels in /var/cache/gpulab/wheels, index PyPI (or pip.conf)) do not offer for webdataset; they have 1.0.2,"
    ) in run.stdout, run.stdout[-3000:]
    assert "TASK [gpulab.cluster.training : Install the pinned frameworks]" not in run.stdout
    assert on("gpu1", "/opt/gpulab/train/bin/pip show webdataset | grep ^Version") == "Version: 1.0.2"
