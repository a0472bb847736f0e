"""scripts/progress.py: what `make lab` shows while site.yml runs, and that the log keeps everything."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import progress  # noqa: E402

# The first 120 lines of a lab converge's log (site.yml on the 4-node lab, 2026-12-01).
RECORDED = ROOT / "tests" / "unit" / "fixtures" / "lab" / "converge-head.log"


def test_plays_and_roles_are_shown_once_each():
    tracker = progress.Progress()
    shown = [text for line in RECORDED.read_text().splitlines(keepends=True) if (text := tracker.feed(line))]
    assert shown == [
        "play: Preflight checks",
        "  role gpulab.cluster.nvidia_driver",
        "play: OS baseline on every node",
        "  role gpulab.cluster.common",
    ]


def test_a_role_is_shown_once_per_play_and_the_recap_is_marked():
    tracker = progress.Progress()
    lines = [
        "PLAY [one] ***\n",
        "TASK [gpulab.cluster.cuda : a] ***\n",
        "TASK [gpulab.cluster.common : b] ***\n",  # cuda imports common's apt_sources, then goes on
        "TASK [gpulab.cluster.cuda : c] ***\n",
        "PLAY [two] ***\n",
        "TASK [gpulab.cluster.cuda : d] ***\n",
        "PLAY RECAP ***\n",
    ]
    assert [tracker.feed(line) for line in lines] == [
        "play: one",
        "  role gpulab.cluster.cuda",
        "  role gpulab.cluster.common",
        None,
        "play: two",
        "  role gpulab.cluster.cuda",
        "recap",
    ]


def test_the_log_keeps_every_line(tmp_path):
    log = tmp_path / "converge.log"
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "progress.py"), str(log), "converge"],
        input=RECORDED.read_text(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.read_text() == RECORDED.read_text()
    assert run.stdout == ""
    assert run.stderr.splitlines()[0] == "converge [00:00] play: Preflight checks"
    assert len(run.stderr.splitlines()) == 4
