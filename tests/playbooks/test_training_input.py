"""The training role refuses bad settings before it touches a node (no lab needed: the connection
points at a Docker socket that does not exist)."""

import pytest
from unreachable import run_playbook


def training(extra_vars):
    run = run_playbook("playbooks/training.yml", extra_vars)
    return run.returncode, run.stdout + run.stderr


@pytest.mark.parametrize(
    "extra_vars, message",
    [
        (
            {"training_frameworks": ["pytorch", "horovod"]},
            "training_frameworks: horovod is refused: Horovod's last release (0.28.1) does not build against"
            " PyTorch >= 2.1: use PyTorch DDP (torchrun, the ddp job template) or DeepSpeed instead",
        ),
        (
            {"training_frameworks": ["pytorch", "mxnet", "caffe"]},
            "training_frameworks names frameworks gpulab does not know: mxnet, caffe"
            " (known: pytorch, deepspeed, webdataset, scikit-learn, tensorflow, jax, ray)",
        ),
        (
            {"training_versions": {"webdataset": "1.0.2"}},
            "training_versions has no pin for pytorch, deepspeed, scikit-learn, ray",
        ),
        (
            {
                "training_versions": {
                    "pytorch": ">=2.1",
                    "deepspeed": "0.19.8",
                    "webdataset": "latest",
                    "scikit-learn": "1.9.1",
                    "ray": "2.60.0",
                }
            },
            "training_versions must hold exact versions (like 2.13.0): pytorch is >=2.1, webdataset is latest",
        ),
    ],
)
def test_bad_training_settings_are_refused_naming_the_variable(extra_vars, message):
    rc, output = training(extra_vars)
    assert rc != 0
    assert "Training settings: " + message in output, output[-3000:]
    assert "Install what the environment is built with" not in output  # stopped before any node was touched


def test_a_training_setting_of_the_wrong_type_is_refused_by_the_role_spec():
    rc, output = training({"training_stage_max_age_days": "soon"})
    assert rc != 0
    assert "argument 'training_stage_max_age_days' is of type str" in output, output[-3000:]
    assert "Install what the environment" not in output


def test_a_single_framework_not_in_a_list_is_refused():
    rc, output = training({"training_frameworks": "pytorch"})
    assert rc != 0
    assert "Training settings: training_frameworks must be a list, got 'pytorch'" in output, output[-3000:]
