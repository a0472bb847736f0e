import sys
import threading
import time
import types
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import nvidia_smi as smi
from ansible_collections.gpulab.cluster.plugins.modules import gpu_health

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia_smi"


def read(name):
    return (FIXTURES / name).read_text()


def records(result):
    return {r["check"]: r for r in result["checks"]}


@pytest.fixture
def node(monkeypatch):
    """A fake node: which binaries exist and what each command prints."""

    class Node:
        bins = {"nvidia-smi": "/usr/bin/nvidia-smi", "journalctl": "/usr/bin/journalctl", "dmesg": "/usr/bin/dmesg"}
        replies: dict = {}
        calls: list = []
        pci = None  # the NVIDIA GPUs on the PCI bus; None: sysfs not readable

        deadlines: list = []  # smi_timeout as each nvidia-smi call got it

        def run_command(self, module, cmd, environ_update=None, **kw):
            # Every command runs in the C locale: the parsers read English numbers and words.
            assert module.run_command_environ_update == {"LC_ALL": "C", "LANG": "C"}
            assert not cmd[0].endswith("nvidia-smi"), "nvidia-smi runs under its deadline"
            return self.answer(cmd)

        def run_with_deadline(self, cmd, seconds):
            assert cmd[0].endswith("nvidia-smi"), cmd
            self.deadlines.append(seconds)
            return self.answer(cmd)

        def answer(self, cmd):
            self.calls.append(cmd)
            key = " ".join(cmd[1:3]) if cmd[0].endswith("nvidia-smi") else cmd[0].rsplit("/", 1)[-1]
            if key.startswith((f"--query-gpu={smi.MEMORY_FIELDS}", "--query-compute-apps")):
                key = "memory " + key  # its own replies, so that "--query-gpu" means the main query
            for prefix, reply in self.replies.items():
                if key.startswith(prefix):
                    return reply
            return 0, "", ""

    n = Node()
    n.calls = []
    n.replies = {}
    n.deadlines = []
    monkeypatch.setattr(gpu_health, "_pci_gpus", lambda: n.pci)
    monkeypatch.setattr(gpu_health, "run_with_deadline", n.run_with_deadline)
    monkeypatch.setattr(
        gpu_health.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: n.bins.get(name), raising=True
    )
    return n


def test_no_driver_on_a_node_without_declared_gpus_is_unavailable(run_module, node):
    node.bins = {}
    result, failed = run_module(gpu_health.main, {}, run_command=node.run_command)
    assert not failed
    assert result["status"] == "unavailable" and result["source"] == "none"
    assert result["checks"] == [
        {
            "check": "gpu_query",
            "status": "unavailable",
            "value": None,
            "threshold": None,
            "unit": None,
            "code": "GPU_UNAVAILABLE",
            "message": "nvidia-ml-py is not installed; nvidia-smi is not installed: nothing to check, "
            "and no GPU declared here",
        }
    ]


def test_no_driver_on_a_node_declared_with_gpus_fails(run_module, node):
    node.bins = {}
    result, failed = run_module(
        gpu_health.main, {"expected_count": 2, "driver_version": "550"}, run_command=node.run_command
    )
    assert failed and result["status"] == "fail"
    assert [(r["check"], r["status"], r["code"], r["message"]) for r in result["checks"]] == [
        (
            "gpu_count",
            "fail",
            "GPU_MISSING",
            "2 GPUs declared, none could be read: nvidia-ml-py is not installed; nvidia-smi is not installed",
        ),
        (
            "driver",
            "fail",
            "DRIVER_MISSING",
            "driver 550 pinned, none answers: nvidia-ml-py is not installed; nvidia-smi is not installed",
        ),
    ]
    assert result["msg"].startswith("2 check(s) at or above 'fail': gpu_count: 2 GPUs declared, none could be read")


def test_driver_not_loaded_is_unavailable(run_module, node):
    node.replies = {"--query-gpu": (9, "", "NVIDIA-SMI has failed because it couldn't communicate with the driver")}
    result, failed = run_module(gpu_health.main, {}, run_command=node.run_command)
    assert not failed and result["status"] == "unavailable"
    assert "nvidia-smi exited 9: the NVIDIA driver is not loaded" in result["checks"][0]["message"]


def test_gpu_fallen_off_the_bus_is_a_fault(run_module, node):
    node.replies = {"--query-gpu": (15, "", "Unable to determine the device handle for GPU0000:C1:00.0: GPU is lost.")}
    result, failed = run_module(gpu_health.main, {"xid_window_hours": 0}, run_command=node.run_command)
    assert failed
    assert (
        result["msg"] == "1 check(s) at or above 'fail': gpu_query: nvidia-smi exited 15: a GPU has fallen off the bus"
    )


def test_healthy_geforce_node(run_module, node):
    node.replies = {
        "--query-gpu": (0, read("query_rtx4090_550.csv"), ""),
        "--query-remapped-rows": (6, "", "This query is not supported"),
        "nvlink --status": (0, "", ""),
        "journalctl": (0, read("kern_xid.log").split("\n", 3)[0] + "\n", ""),
    }
    result, failed = run_module(
        gpu_health.main,
        {"expected_count": 2, "expected_model": "RTX 4090", "driver_version": "550"},
        run_command=node.run_command,
        check_mode=True,
    )
    assert not failed, result.get("msg")
    assert result["changed"] is False
    assert result["source"] == "nvidia-smi csv"
    assert result["status"] == "pass"  # GeForce has no ECC: n/a, which never lowers the verdict
    assert result["summary"] == {"pass": 18, "warn": 0, "fail": 0, "unavailable": 0, "n/a": 2}  # gpu_bus too
    checks = records(result)
    assert checks["nvlink"]["message"] == "no NVLink on this node"
    assert checks["xid"]["status"] == "pass"
    assert node.calls[0][1].startswith("--query-gpu=index,uuid,name,pci.bus_id,")
    assert node.calls[-1][:4] == ["/usr/bin/journalctl", "-k", "-o", "short-iso"]


# The bus ids of query_a100_470_old_names.csv, as --query-gpu and --query-compute-apps print them.
A100_BUSES = ("00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0")


def test_old_driver_retries_with_old_field_names(run_module, node):
    calls = []

    def answer(cmd):
        calls.append(cmd)
        if cmd[1] == f"--query-gpu={smi.MEMORY_FIELDS}":  # GPU 1 runs a job; GPU 2 holds 30 GB with none
            return (
                0,
                "\n".join(f"{bus}, {used}, 40960" for bus, used in zip(A100_BUSES, (0, 30001, 30000, 1), strict=True)),
                "",
            )
        if cmd[1].startswith("--query-compute-apps="):
            return 0, f"{A100_BUSES[1]}, 4242, 30000\n", ""
        if cmd[1].startswith("--query-gpu="):
            if "clocks_event_reasons" in cmd[1]:
                return 2, 'Field "clocks_event_reasons.active" is not a valid field to query.', ""
            return 0, read("query_a100_470_old_names.csv"), ""
        if "--query-remapped-rows" in cmd[1]:
            return 0, read("remapped_rows_yes_no.csv"), ""
        if cmd[0].endswith("journalctl"):
            return 0, read("kern_xid.log"), ""
        return 0, "", ""

    node.answer = answer
    result, failed = run_module(
        gpu_health.main, {"expected_count": 4, "fail_on": "never"}, run_command=node.run_command
    )
    assert not failed and result["status"] == "fail"
    assert "clocks_throttle_reasons.active" in calls[1][1]
    checks = records(result)
    assert checks["gpu1.row_remap"]["code"] == "ROW_REMAP_PENDING"
    assert checks["gpu2.pcie_width"]["status"] == "fail"
    assert checks["xid"]["value"] == 1
    assert [x["code"] for x in result["xids"]] == [13, 43, 79]
    held = {g: checks[f"{g}.memory_held"] for g in ("gpu0", "gpu1", "gpu2", "gpu3")}
    assert {g: (c["status"], c["value"]) for g, c in held.items()} == {
        "gpu0": ("pass", 0),
        "gpu1": ("pass", 30001),
        "gpu2": ("warn", 30000),
        "gpu3": ("pass", 1),
    }
    assert held["gpu2"]["code"] == "GPU_MEMORY_HELD" and "no process" in held["gpu2"]["message"]


def test_xml_source(run_module, node):
    node.replies = {"-q -x": (0, read("q_x_h100_550.xml"), ""), "journalctl": (1, "", "no journal")}
    node.bins = dict(node.bins, dmesg=None)
    result, failed = run_module(gpu_health.main, {"source": "xml", "fail_on": "warn"}, run_command=node.run_command)
    assert failed
    assert "gpu0.temperature: 84 C is within 5 C of slowdown at 87 C" in result["msg"]
    assert records(result)["xid"]["message"] == "kernel log not readable: neither journalctl nor dmesg is available"


def test_nvml_source_requires_the_bindings(run_module, node):
    node.bins = {}
    result, failed = run_module(gpu_health.main, {"source": "nvml"}, run_command=node.run_command)
    assert not failed
    assert result["checks"][0]["message"].startswith("nvidia-ml-py is not installed")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"expected_count": 0}, "expected_count must be at least 1, got 0; leave it unset on nodes without GPUs"),
        ({"temperature_margin_c": -1}, "temperature_margin_c must be 0 or more, got -1.0"),
        ({"retired_pages_max": -1}, "retired_pages_max must be 0 or more, got -1"),
        ({"pcie_width": 12}, "pcie_width must be a PCIe link width (1, 2, 4, 8, 16 or 32), got 12"),
    ],
)
def test_bad_input_is_refused(run_module, node, args, message):
    result, failed = run_module(gpu_health.main, args, run_command=node.run_command)
    assert failed and result["msg"] == message


@pytest.mark.parametrize("declared", [{}, {"expected_count": 2}])
def test_an_nvidia_smi_that_does_not_answer_is_a_failure_not_a_wait(run_module, node, declared):
    node.replies = {"--query-gpu": (124, "", "")}  # past the deadline
    result, failed = run_module(gpu_health.main, {**declared, "fail_on": "never"}, run_command=node.run_command)
    assert not failed and result["status"] == "fail"
    hung = records(result)["gpu_query"]
    assert (hung["status"], hung["code"], hung["value"]) == ("fail", "GPU_DRIVER_HUNG", 30)
    assert hung["message"].startswith("nvidia-smi --query-gpu did not answer in 30 s: the driver is unresponsive")
    assert node.deadlines == [30]
    # One call, no retry with the old field names; the kernel log is still read (Xid lines say why).
    assert [c for c in node.calls if c[0].endswith("nvidia-smi")] == node.calls[:1]
    assert node.calls[1][0].endswith("journalctl")


def test_a_zero_deadline_is_refused(run_module, node):
    result, failed = run_module(gpu_health.main, {"smi_timeout": 0}, run_command=node.run_command)
    assert failed and result["msg"] == "smi_timeout must be at least 1, got 0"


def test_the_pci_bus_is_read_from_sysfs(monkeypatch, tmp_path):
    for name, vendor, pci_class in (("0000:00:06.0", "0x10de", "0x030200"), ("0000:00:1f.0", "0x8086", "0x060100")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "vendor").write_text(vendor + "\n")
        (tmp_path / name / "class").write_text(pci_class + "\n")
    monkeypatch.setattr(gpu_health, "PCI_DEVICES", str(tmp_path))
    assert gpu_health._pci_gpus() == ["0000:00:06"]
    monkeypatch.setattr(gpu_health, "PCI_DEVICES", str(tmp_path / "missing"))
    assert gpu_health._pci_gpus() is None


def test_a_gpu_on_the_bus_that_nvidia_smi_does_not_list_fails(run_module, node):
    """The recorded H200 answers; a second GPU sits on the bus and the driver lost it: no inventory needed."""
    node.pci = ["0000:00:06", "0000:41:00"]
    node.replies = {
        "--query-gpu": (0, read("query_h200_580.csv"), ""),
        "memory --query-gpu": (0, "00000000:00:06.0, 0, 143771\n", ""),
        "journalctl": (0, "2026-12-04T10:00:00+0000 gpu1 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n", ""),
    }
    result, failed = run_module(gpu_health.main, {}, run_command=node.run_command)
    assert failed and result["status"] == "fail"
    checks = records(result)
    assert (checks["gpu_pci"]["code"], checks["gpu_pci"]["value"], checks["gpu_pci"]["threshold"]) == (
        "GPU_NOT_IN_DRIVER",
        2,
        1,
    )
    assert checks["gpu_bus"]["status"] == "pass"
    assert (checks["gpu0.memory_held"]["status"], checks["gpu0.memory_held"]["value"]) == ("pass", 0)
    # The driver lists no GPU at all while the bus shows them: a fault, not "nothing to check".
    node.replies["--query-gpu"] = (0, "", "")
    result, failed = run_module(gpu_health.main, {"fail_on": "never"}, run_command=node.run_command)
    assert records(result)["gpu_pci"]["status"] == "fail" and result["status"] == "fail"


def test_a_gpu_fallen_off_the_bus_fails_even_when_nvidia_smi_answers(run_module, node):
    node.replies = {
        "--query-gpu": (0, read("query_h200_580.csv"), ""),
        "journalctl": (
            0,
            "2026-12-04T10:02:44+0000 gpu1 kernel: NVRM: GPU 0000:00:06.0: GPU has fallen off the bus.\n",
            "",
        ),
    }
    result, failed = run_module(gpu_health.main, {"fail_on": "never"}, run_command=node.run_command)
    bus = records(result)["gpu_bus"]
    assert (bus["status"], bus["code"]) == ("fail", "GPU_FELL_OFF_BUS") and result["status"] == "fail"
    assert "gpu_pci" not in records(result)  # sysfs not readable in this fake: no record, not a guess


def test_an_nvml_that_does_not_answer_is_a_failure_within_its_deadline(run_module, node, monkeypatch):
    """NVML blocks in the driver when it is wedged: the module waits smi_timeout for it, not for ever, and
    does not go on to nvidia-smi (which would hang as long)."""
    release = threading.Event()
    wedged = types.ModuleType("pynvml")
    wedged.NVMLError = type("NVMLError", (Exception,), {})

    def init():
        release.wait(60)
        raise wedged.NVMLError("released by the test")

    wedged.nvmlInit = init
    monkeypatch.setitem(sys.modules, "pynvml", wedged)
    started = time.monotonic()
    try:
        result, failed = run_module(
            gpu_health.main, {"smi_timeout": 1, "fail_on": "never"}, run_command=node.run_command
        )
    finally:
        release.set()
    assert time.monotonic() - started < 5
    hung = records(result)["gpu_query"]
    assert (hung["status"], hung["code"], hung["value"]) == ("fail", "GPU_DRIVER_HUNG", 1)
    assert hung["message"].startswith("NVML (nvidia-ml-py) did not answer in 1 s: the driver is unresponsive")
    assert result["source"] == "nvml" and not [c for c in node.calls if c[0].endswith("nvidia-smi")]
