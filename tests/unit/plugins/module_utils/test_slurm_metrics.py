import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import slurm_metrics
from ansible_collections.gpulab.cluster.plugins.module_utils.slurm import SlurmParseError

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "slurm"
PROMTOOL = shutil.which("promtool") or str(ROOT / ".cache" / "tools" / "promtool")
NODES = (FIXTURES / "scontrol-show-node.txt").read_text()
QUEUE = (FIXTURES / "squeue-states.txt").read_text()


def promtool_check(text):
    run = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    return run.returncode, (run.stdout + run.stderr).strip()


def test_recorded_nodes_parse_with_state_drain_and_reason():
    assert slurm_metrics.parse_nodes(NODES) == [
        {"name": "gpu1", "state": "allocated", "drain": False, "not_responding": False, "reason": ""},
        {"name": "gpu2", "state": "idle", "drain": True, "not_responding": False, "reason": "disk swap tomorrow"},
    ]


@pytest.mark.parametrize(
    ("state", "base", "drain", "not_responding"),
    [
        ("IDLE*", "idle", False, True),
        ("DOWN+NOT_RESPONDING", "down", False, True),
        ("DOWN+DRAIN+NOT_RESPONDING", "down", True, True),
        ("MIXED+DRAIN", "mixed", True, False),
        ("IDLE+DRAIN+POWERED_DOWN~", "idle", True, False),
        ("ALLOCATED+COMPLETING", "allocated", False, False),
    ],
)
def test_states_slurm_prints_for_troubled_nodes(state, base, drain, not_responding):
    line = NODES.splitlines()[0].replace("State=ALLOCATED", f"State={state}")
    [node] = slurm_metrics.parse_nodes(line)
    assert (node["state"], node["drain"], node["not_responding"]) == (base, drain, not_responding)


def test_recorded_queue_counts_states():
    assert slurm_metrics.parse_queue(QUEUE) == Counter({"pending": 1, "running": 1})
    assert slurm_metrics.parse_queue("") == Counter({"pending": 0, "running": 0})
    assert slurm_metrics.parse_queue("RUNNING\nCOMPLETING\n")["completing"] == 1


def test_rendered_metrics_have_exact_values_and_pass_promtool():
    text = slurm_metrics.render(slurm_metrics.parse_nodes(NODES), slurm_metrics.parse_queue(QUEUE))
    assert promtool_check(text) == (0, "")
    lines = set(text.splitlines())
    assert {
        "gpulab_slurm_up 1",
        'gpulab_slurm_nodes{state="allocated"} 1',
        'gpulab_slurm_nodes{state="idle"} 1',
        'gpulab_slurm_node_drain{node="gpu1",reason=""} 0',
        'gpulab_slurm_node_drain{node="gpu2",reason="disk swap tomorrow"} 1',
        'gpulab_slurm_node_not_responding{node="gpu2"} 0',
        'gpulab_slurm_jobs{state="pending"} 1',
        'gpulab_slurm_jobs{state="running"} 1',
    } <= lines


def test_a_slurm_that_does_not_answer_is_up_0_with_the_reason():
    text = slurm_metrics.render(None, error='scontrol: slurm_load_node error: Unable to contact "slurm" controller')
    assert promtool_check(text) == (0, "")
    assert text.splitlines()[2] == "gpulab_slurm_up 0"
    assert 'reason="scontrol: slurm_load_node error: Unable to contact \\"slurm\\" controller"} 1' in text
    assert "gpulab_slurm_nodes" not in text


def test_output_that_is_not_scontrol_s_is_refused():
    with pytest.raises(SlurmParseError, match="not a node line"):
        slurm_metrics.parse_nodes("PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\ngpu* up infinite 2 idle gpu[1-2]\n")
