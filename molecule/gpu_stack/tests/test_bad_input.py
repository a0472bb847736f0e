"""Bad GPU-stack input is refused with a message naming the variable.

Each case runs the GPU stack's playbook with the tag of the role that owns the variable: a tagged run
is how an operator applies one role (README), and it spares the case the other roles' check-mode work
(a case refused by the last role took 45 s untagged)."""

import json

import pytest


@pytest.mark.parametrize(
    ("tag", "extra_vars", "expected"),
    [
        ("nvidia_driver", {"nvidia_driver_branch": "5350"}, "nvidia_driver_branch '5350' is not a Debian branch"),
        (
            "nvidia_driver",
            {"nvidia_driver_version": "550.54.14"},
            "nvidia_driver_version must be empty or an upstream version of branch 535",
        ),
        (
            "nvidia_driver",
            {"nvidia_driver_source": "ppa"},
            "nvidia_driver_source must be one of: distribution, cuda_repo, got: ppa",
        ),
        (  # gs-roce goes without the toolkit; asking for it makes the role check the version
            "cuda",
            {"cuda_version": "twelve", "cuda_install_toolkit": True},
            "cuda_version must be major.minor such as 12.4 (got 'twelve')",
        ),
        ("nccl", {"nccl_version": "2.21"}, "nccl_version must look like 2.21.5, got '2.21'"),
        # Pins Debian 12's sources cannot meet (the example inventory's), refused before any change.
        (
            "nvidia_driver",
            {"nvidia_driver_branch": "550"},
            "nvidia_driver_branch 550 cannot be met: the apt sources offer nvidia-smi 535.",
        ),
        (
            "cuda",
            {"cuda_version": "12.4", "cuda_install_toolkit": True},
            "cuda_version 12.4 cannot be met: the apt sources offer nvidia-cuda-toolkit 11.8.",
        ),
        (
            "nccl",
            {"gpulab_network": {"fabric": "omnipath", "networks": {}}},
            "fabric must be roce, infiniband or ethernet",
        ),
        (
            "container_runtime",
            {"container_runtime_docker_source": "snap"},
            "container_runtime_docker_source must be one of: distribution, docker",
        ),
    ],
)
def test_bad_input_is_refused(ansible_playbook, tag, extra_vars, expected):
    run = ansible_playbook(
        "playbooks/gpu_stack.yml", "--check", "--limit", "gs-roce", "--tags", tag, "-e", json.dumps(extra_vars)
    )
    assert run.returncode == 2, run.stdout[-3000:]
    assert expected in " ".join(run.stdout.split()), run.stdout[-3000:]
