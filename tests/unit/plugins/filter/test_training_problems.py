"""The training role's settings check: every problem at once, each naming its variable."""

from ansible_collections.gpulab.cluster.plugins.filter.training import training_problems

KNOWN = ["pytorch", "deepspeed", "webdataset", "scikit-learn"]
PINS = {"pytorch": "2.9.1", "deepspeed": "0.19.8", "webdataset": "1.0.2", "scikit-learn": "1.9.1"}


def test_good_training_settings_have_no_problem():
    assert training_problems(["pytorch", "webdataset"], versions=PINS, known=KNOWN) == []


def test_every_training_problem_at_once_each_naming_its_variable():
    versions = {"pytorch": ">=2.1", "webdataset": "latest", "deepspeed": 0.19}
    assert training_problems(
        ["pytorch", "horovod", "mxnet", "webdataset", "scikit-learn"], versions=versions, known=KNOWN
    ) == [
        "training_frameworks: horovod is refused: Horovod's last release (0.28.1) does not build against"
        " PyTorch >= 2.1: use PyTorch DDP (torchrun, the ddp job template) or DeepSpeed instead",
        "training_frameworks names frameworks gpulab does not know: mxnet (known: pytorch, deepspeed, webdataset,"
        " scikit-learn)",
        "training_versions has no pin for scikit-learn",
        "training_versions must hold exact versions (like 2.13.0): pytorch is >=2.1, webdataset is latest",
    ]
    assert training_problems("pytorch", versions=PINS, known=KNOWN) == [
        "training_frameworks must be a list, got 'pytorch'"
    ]
