"""The monitoring role's GPU collector (roles/monitoring/templates/gpulab_gpu_metrics.py.j2), rendered and run
as the timer runs it, against the pynvml stand-in and a journalctl stand-in that prints a kernel log."""

import os
import stat
import subprocess
import sys
from pathlib import Path

from role_templates import render

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "roles" / "monitoring" / "templates" / "gpulab_gpu_metrics.py.j2"
XID_79 = "NVRM: Xid (PCI:0000:c1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def collector(tmp_path):
    text = render(TEMPLATE, __monitoring_lib=str(ROOT / ".collections"))
    path = tmp_path / "gpulab_gpu_metrics.py"
    path.write_text(text)
    return path


def collect(tmp_path, script, kernel_log):
    """One collection; the journalctl stand-in prints kernel_log whatever the cursor says."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "kernel.log").write_text(kernel_log)
    journalctl = bin_dir / "journalctl"
    journalctl.write_text(f"#!/bin/sh\ncat {bin_dir / 'kernel.log'}\n")
    journalctl.chmod(journalctl.stat().st_mode | stat.S_IXUSR)
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        PYTHONPATH=str(ROOT / "tests" / "stand_ins"),
        GPULAB_NVML_STAND_IN=str(ROOT / "tests" / "stand_ins" / "nvml-two-gpus.json"),
    )
    out, state = tmp_path / "gpulab_gpu.prom", tmp_path / "state"
    state.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, str(script), str(out), str(state)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {line for line in out.read_text().splitlines() if line.startswith("gpulab_gpu_xid_events_total{")}


def test_the_first_run_writes_zero_series_and_the_first_xid_79_rises_from_zero(tmp_path):
    script = collector(tmp_path)
    first = collect(tmp_path, script, "")
    assert 'gpulab_gpu_xid_events_total{bus_id="0000:c1:00",xid="79"} 0' in first
    assert 'gpulab_gpu_xid_events_total{bus_id="0000:41:00",xid="48"} 0' in first
    assert len(first) == 24  # two GPUs, twelve hardware XIDs each
    second = collect(tmp_path, script, XID_79 + "\n")
    assert second - first == {'gpulab_gpu_xid_events_total{bus_id="0000:c1:00",xid="79"} 1'}


def test_a_kind_never_seen_is_shown_at_zero_once_then_counted(tmp_path):
    script = collector(tmp_path)
    collect(tmp_path, script, "")
    unknown = "NVRM: Xid (PCI:0000:41:00): 154, GPU recovery action changed"
    seen = collect(tmp_path, script, unknown + "\n")
    assert 'gpulab_gpu_xid_events_total{bus_id="0000:41:00",xid="154"} 0' in seen
    counted = collect(tmp_path, script, "")
    assert 'gpulab_gpu_xid_events_total{bus_id="0000:41:00",xid="154"} 1' in counted
