"""Faults injected into the built lab, all at once: one validate.yml run must name each with its check and code
(and, where the node is a Slurm node, drain it with a gpulab reason), show them in the report, and once every
fault is undone, pass and resume the nodes. The table is docs/validation.md's "Faults the checks catch".

The lab has no GPUs and shares one clock: the GPU faults and the clock's are stand-ins (an nvidia-smi, a PCI
bus, a kernel log, an nccl-tests and a chronyc that print what a faulty node prints); the checks that read
them run unchanged."""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import helpers
import pytest
import yaml
from helpers import on, wait_for
from pngread import banner_rows, png_rows

ROOT = Path(__file__).resolve().parents[2]
STAND_INS = ROOT / "tests" / "stand_ins"
FIXTURES = ROOT / "tests" / "unit" / "fixtures"
SITE_PACKAGES = "/opt/gpulab/train/lib/python3*/site-packages"
FAKE_VERSION = "9.9.9"  # sorts after the pin, so gpu2 is the odd one out of two
SAVED_KEY = "/root/munge.key.gpulab-test"
SMI_TIMEOUT = 5  # validation_smi_timeout for these runs: how long gpu1's hung nvidia-smi holds its check

# fault -> (node, report section, check, code); drains: the reason each Slurm node is drained with.
FAULTS = {
    "gpu2 declared with 2 GPUs, the driver lists one": ("gpu2", "gpu", "gpu_count", "GPU_MISSING"),
    "a second GPU on gpu2's PCI bus that the driver does not list": ("gpu2", "gpu", "gpu_pci", "GPU_NOT_IN_DRIVER"),
    "an Xid 79 in gpu2's kernel log": ("gpu2", "gpu", "xid", "GPU_XID"),
    "that GPU 'has fallen off the bus'": ("gpu2", "gpu", "gpu_bus", "GPU_FELL_OFF_BUS"),
    "nccl-tests in gpu2 at half the busbw it declares": ("gpu2", "nccl", "nccl_busbw", "NCCL_SLOW"),
    "slurmd stopped on gpu2": ("gpu2", "slurm", "slurm.slurmd", "SLURM_SLURMD_DOWN"),
    "an nvidia-smi on gpu1 that hangs": ("gpu1", "gpu", "gpu_query", "GPU_DRIVER_HUNG"),
    "a munge key on gpu1 that differs": ("gpu1", "slurm", "slurm.munge", "SLURM_MUNGE"),
    "storage1's clock 2.5 s fast of its time source": ("storage1", "host", "clock", "CLOCK_SKEW"),
    "jumbo frames (MTU 9000) on mgmt1 alone": ("mgmt1", "host", "mtu.management", "NET_MTU"),
    "a webdataset on gpu2 that differs": ("cluster", "consistency", "consistency.webdataset", "VERSION_MISMATCH"),
    "an OSD down on storage1": ("cluster", "ceph", "ceph.osds", "CEPH_OSD_DOWN"),
}
DRAINS = {"gpu2": "gpulab: validate: gpu_bus", "gpu1": "gpulab: validate: gpu_query"}

# gpu2's GPUs: the first of two RTX 4090 (bus 41:00.0) answers; the second (c1:00.0) is on the bus, and the
# kernel logged its Xid 79. In-node busbw declared at twice what the stand-in nccl-tests prints (24.6 GB/s).
RTX_4090 = (FIXTURES / "nvidia_smi" / "query_rtx4090_550.csv").read_text().splitlines(keepends=True)[0]
PCI_GPUS = ("0000:41:00.0", "0000:c1:00.0")
PCI_STAND_IN = "/run/gpulab-test-pci"
XID_79 = "NVRM: Xid (PCI:0000:c1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
DECLARED_BUSBW = 49.2
NCCL_TESTS = "/opt/nccl-tests/build/all_reduce_perf"
NCCL_OUTPUT = "/usr/local/share/gpulab-nccl-tests.txt"
# The lab's own chronyc output with the clock 2.5 s fast.
SKEWED = (
    (FIXTURES / "node" / "chronyc_tracking_synced.txt")
    .read_text()
    .replace("0.000001437 seconds slow", "2.500000000 seconds fast")
)
# Stand-in commands go to /usr/local/bin, before /usr/bin in PATH; restore() removes each.


def put(node, path, text, mode="0755"):
    """A file on the node, into place in one rename: a check never sees it half-written."""
    on(node, f"mkdir -p {os.path.dirname(path)} && printf %s {shlex.quote(text)} > {path}.new "
       f"&& chmod {mode} {path}.new && mv {path}.new {path}")  # fmt: skip


def validate(tmp_path, name, *inventories):
    return helpers.validate(tmp_path / name, *inventories, drain=True, smi_timeout=SMI_TIMEOUT)


def node_state(name):
    line = on("mgmt1", f"scontrol -o show node {name}")
    state = line.split(" State=", 1)[1].split(" ", 1)[0]
    reason = line.split(" Reason=", 1)[1].strip() if " Reason=" in line else ""
    return state, reason


def webdataset_dist_info(node):
    """webdataset's .dist-info directory on the node and the version its name carries."""
    path = on(node, f"ls -d {SITE_PACKAGES}/webdataset-*.dist-info")
    return path, path.rsplit("/webdataset-", 1)[1].removesuffix(".dist-info")


def inject():
    on("gpu2", "systemctl stop slurmd")
    on("gpu1", f"cp -p /etc/munge/munge.key {SAVED_KEY} && head -c 1024 /dev/urandom > /etc/munge/munge.key")
    on("gpu1", "systemctl restart munge")
    pinned, version = webdataset_dist_info("gpu2")
    on("gpu2", f"mv {pinned} {pinned.replace(version, FAKE_VERSION)}")
    on("storage1", "systemctl stop ceph-osd@0")
    put("gpu1", "/usr/local/bin/nvidia-smi", "#!/bin/sh\nexec sleep 600\n")  # a driver that never answers
    put("gpu2", "/usr/local/share/gpulab-query.csv", RTX_4090, "0644")
    put("gpu2", "/usr/local/bin/nvidia-smi", (STAND_INS / "nvidia-smi-query.sh").read_text())
    for bus in PCI_GPUS:
        put("gpu2", f"{PCI_STAND_IN}/{bus}/vendor", "0x10de\n", "0644")
        put("gpu2", f"{PCI_STAND_IN}/{bus}/class", "0x030000\n", "0644")
    on("gpu2", f"mount --bind {PCI_STAND_IN} /sys/bus/pci/devices")
    put("gpu2", "/usr/local/bin/dmesg", f'#!/bin/sh\necho "$(date +%Y-%m-%dT%H:%M:%S,000000+00:00) {XID_79}"\n')
    put("gpu2", NCCL_OUTPUT, (FIXTURES / "nccl" / "v2.13_8gpu_sweep.txt").read_text(), "0644")
    put("gpu2", NCCL_TESTS, f"#!/bin/sh\ncat {NCCL_OUTPUT}\n")
    put("storage1", "/usr/local/bin/chronyc", f"#!/bin/sh\ncat <<'EOF'\n{SKEWED}EOF\n")
    on("mgmt1", "ip link set eth0 mtu 9000")
    assert wait_for(lambda: json.loads(on("storage1", "ceph osd stat -f json"))["num_up_osds"] == 1, 60)


def restore():
    """Undo every fault, each on its own: one that cannot be undone must not leave the others in place."""
    steps = [
        ("mgmt1", "ip link set eth0 mtu 1500"),
        ("storage1", "rm -f /usr/local/bin/chronyc"),
        ("gpu1", "rm -f /usr/local/bin/nvidia-smi"),
        ("gpu2", "! mountpoint -q /sys/bus/pci/devices || umount /sys/bus/pci/devices"),
        ("gpu2", f"rm -rf {PCI_STAND_IN} /usr/local/bin/nvidia-smi /usr/local/bin/dmesg /opt/nccl-tests {NCCL_OUTPUT}"),
        ("gpu2", "rm -f /usr/local/share/gpulab-query.csv"),
        # ceph-osd@'s unit allows 3 starts in 30 minutes; a lab that has run this before may be at that limit.
        ("storage1", "systemctl reset-failed ceph-osd@0; systemctl start ceph-osd@0"),
        (
            "gpu2",
            f"f=$(ls -d {SITE_PACKAGES}/webdataset-{FAKE_VERSION}.dist-info 2>/dev/null) || exit 0; "
            f'mv "$f" "$(echo "$f" | sed \'s/{FAKE_VERSION}/{webdataset_dist_info("gpu1")[1]}/\')"',
        ),
        ("gpu1", f"test ! -e {SAVED_KEY} || mv {SAVED_KEY} /etc/munge/munge.key; systemctl restart munge slurmd"),
        ("gpu2", "systemctl start slurmd"),
    ]
    failures = []
    for node, command in steps:
        try:
            on(node, command)
        except subprocess.CalledProcessError as exc:
            failures.append(f"{node}: {command}: {exc.stderr.strip()}")
    assert failures == [], failures
    assert wait_for(lambda: on("storage1", "ceph health") == "HEALTH_OK", 120), on("storage1", "ceph health detail")
    # Both slurmd registered again: slurmctld answers for them without a lost-node flag.
    assert wait_for(lambda: not any(node_state(n)[0].endswith("*") for n in ("gpu1", "gpu2")), 60)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """Every fault of FAULTS in the lab at once, gpu2's declaration through an inventory laid over the lab's."""
    tmp_path = tmp_path_factory.mktemp("faults")
    overlay = tmp_path / "declare-gpus.yml"
    gpu2 = {"gpulab_gpu_count": 2, "gpulab_nccl_in_node_busbw_gbs": DECLARED_BUSBW}
    overlay.write_text(yaml.safe_dump({"compute": {"hosts": {"gpu2": gpu2}}}))
    try:
        inject()
        run, report, report_dir = validate(tmp_path, "failing", ROOT / "inventory" / "lab", overlay)
    finally:
        restore()
    yield run, report, report_dir, tmp_path
    if any(node_state(n)[1].startswith("gpulab: validate:") for n in DRAINS):  # a failed test leaves none drained
        validate(tmp_path, "cleanup")


def task_seconds(run, task):
    """How long a task ran: profile_tasks heads each task with the time the one before it took, "(0:00:05.123)"."""
    after = run.stdout.split(f"TASK [gpulab.cluster.validation : {task}]", 1)[1]
    hours, minutes, seconds = re.findall(r"\((\d+):(\d\d):(\d\d\.\d+)\)", after)[1]  # [0]: the one before
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def records(report, where, section):
    scope = report["cluster"] if where == "cluster" else report["nodes"][where]["sections"]
    return scope[section]["checks"]


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_named_with_its_check_and_code(faulty, fault):
    run, report, _report_dir, _tmp_path = faulty
    where, section, check, code = FAULTS[fault]
    found = [r for r in records(report, where, section) if r["check"] == check]
    assert [(r["status"], r["code"]) for r in found] == [("fail", code)], records(report, where, section)
    assert run.returncode == 2 and report["verdict"] == "fail"


def message(report, where, section, check):
    (found,) = [r for r in records(report, where, section) if r["check"] == check]
    return found["message"]


def test_the_faults_messages_say_what_is_wrong(faulty):
    run, report, _report_dir, _tmp_path = faulty
    assert "gpu2 gpu_count: 1 GPUs found via nvidia-smi csv, 2 expected" in run.stdout
    assert message(report, "gpu2", "gpu", "gpu_pci").startswith(
        "1 NVIDIA GPU(s) on the PCI bus that nvidia-smi csv does not list: 0000:c1:00;"
    )
    assert message(report, "gpu2", "gpu", "xid").startswith("1 hardware XID event(s), codes [79]; last: ")
    assert report["node_problems"]["gpu2"].startswith(
        "gpu_bus: the kernel log says a GPU has fallen off the bus (0000:c1:00)"
    )
    assert message(report, "gpu2", "nccl", "nccl_busbw") == (
        f"busbw at 268435456-17179869184 B 24.6 GB/s is below {DECLARED_BUSBW * 0.9:g}"
    )
    assert "slurmd is inactive on gpu2" in run.stdout
    assert "does not decode on gpu1" in run.stdout
    assert message(report, "storage1", "host", "clock").startswith(
        "the clock is 2500 ms fast of its time source (AC1E0A0B (172.30.10.11), stratum 11), more than 50 ms"
    )
    assert message(report, "mgmt1", "host", "mtu.management").startswith(
        "eth0 on management (172.30.10.11) has MTU 9000; the plan's is 1500"
    )
    version = message(report, "cluster", "consistency", "consistency.webdataset")
    assert version.startswith(f"gpu2 runs {FAKE_VERSION}; the others run ")
    health = [r for r in records(report, "cluster", "ceph") if r["check"] == "ceph.health"][0]
    assert health["status"] == "warn" and "OSD_DOWN" in health["message"], health
    # gpu2's power is unknown, not zero: the cost estimate names it and leaves it out.
    assert report["cost"]["not_measured"] == ["gpu2"]


def test_a_hung_nvidia_smi_holds_the_check_no_longer_than_its_deadline(faulty):
    run, report, _report_dir, _tmp_path = faulty
    (hung,) = [r for r in records(report, "gpu1", "gpu") if r["check"] == "gpu_query"]
    assert hung["message"].startswith(f"nvidia-smi --query-gpu did not answer in {SMI_TIMEOUT} s"), hung
    assert task_seconds(run, "Check GPU health") <= SMI_TIMEOUT + 10
    # gpu1's versions were still read: its nvidia-smi, asked for the driver, is cut off at the same deadline.
    assert report["versions"]["gpu1"]["kernel"]
    assert task_seconds(run, "Read this node's versions") <= SMI_TIMEOUT + 10


def test_each_slurm_node_with_a_fault_is_drained_with_a_gpulab_reason(faulty):
    for node, reason in DRAINS.items():
        state, said = node_state(node)
        assert "DRAIN" in state and said.startswith(reason), (node, state, said)


def test_the_failing_report_shows_the_node(faulty, browser, tmp_path):
    _run, _report, report_dir, _tmp_path = faulty
    dom = browser("--dump-dom", report_dir=report_dir)
    assert 'id="verdict" data-status="fail"' in dom
    assert "<td>gpu2</td><td>gpu_count</td><td>1 GPUs found via nvidia-smi csv, 2 expected" in dom
    assert "<td>storage1</td><td>clock</td><td>the clock is 2500 ms fast" in dom
    banner = dom.split('id="verdict"', 1)[1].split("</div>", 1)[0]  # the banner lists the reason too
    assert "<li>gpu2 · gpu_bus: the kernel log says a GPU has fallen off the bus" in banner, banner
    browser("--screenshot=/out/failing.png", "--window-size=1280,1400", out_dir=tmp_path, report_dir=report_dir)
    banner_rows(png_rows((tmp_path / "failing.png").read_bytes())[2], "fail")


def test_with_every_fault_undone_it_passes_and_the_nodes_resume(faulty):
    _run, _report, _report_dir, tmp_path = faulty
    run, report, _latest = validate(tmp_path, "passing")
    assert run.returncode == 0, run.stdout[-3000:]
    assert report["verdict"] in ("pass", "warn"), report["failures"]
    assert report["cluster"]["ceph"]["status"] == "pass"
    for node in DRAINS:
        state, reason = node_state(node)
        assert "DRAIN" not in state and reason == "", (node, state, reason)
