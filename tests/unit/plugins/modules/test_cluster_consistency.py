from ansible_collections.gpulab.cluster.plugins.modules import cluster_consistency


def test_compare_fails_naming_the_odd_node(run_module):
    versions = {
        "gpu1": {"os": "Debian 12", "kernel": "6.1.0-37-amd64"},
        "gpu2": {"os": "Debian 12", "kernel": "6.1.0-41-amd64"},
        "gpu3": {"os": "Debian 12", "kernel": "6.1.0-37-amd64"},
    }
    result, failed = run_module(cluster_consistency.main, {"versions": versions, "components": ["os", "kernel"]})
    assert failed
    assert result["msg"] == (
        "1 check(s) at or above 'fail': consistency.kernel: gpu2 runs 6.1.0-41-amd64; the others run 6.1.0-37-amd64"
    )
    assert result["summary"] == {"pass": 1, "warn": 0, "fail": 1, "unavailable": 0, "n/a": 0}


def test_collect_reads_this_node(run_module, monkeypatch, tmp_path):
    monkeypatch.setattr(cluster_consistency, "CUDA_NVCC", str(tmp_path / "no-nvcc"))
    monkeypatch.setattr(
        cluster_consistency.AnsibleModule,
        "get_bin_path",
        lambda self, name, *a, **k: {"dpkg-query": "/usr/bin/dpkg-query"}.get(name),
    )

    def run(module, cmd, environ_update=None, **kw):
        assert cmd == ["/usr/bin/dpkg-query", "-W", "-f", "${Version}", "libnccl2"]
        return 0, "2.21.5-1+cuda12.4", ""

    result, failed = run_module(cluster_consistency.main, {}, run_command=run, check_mode=True)
    assert not failed and result["changed"] is False
    found = result["versions"]
    assert found["nccl"] == "2.21.5"
    assert found["slurm"] is None and found["cuda"] is None
    assert found["kernel"]  # the machine running the test has one


def test_empty_versions_refused(run_module):
    result, failed = run_module(cluster_consistency.main, {"versions": {}})
    assert failed and result["msg"].startswith("versions is empty")


def test_versions_must_be_mappings(run_module):
    result, failed = run_module(cluster_consistency.main, {"versions": {"gpu1": "550"}})
    assert failed and result["msg"] == "versions of gpu1 are not a mapping of component to version"


def test_collect_falls_back_to_the_linked_nccl(run_module, monkeypatch, tmp_path):
    """The wheel path (Debian) has no libnccl2 package: the library the linker finds tells the version."""
    monkeypatch.setattr(cluster_consistency, "CUDA_NVCC", str(tmp_path / "no-nvcc"))
    monkeypatch.setattr(cluster_consistency.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)

    class FakeNccl:
        @staticmethod
        def ncclGetVersion(pointer):
            pointer._obj.value = 22105
            return 0

    monkeypatch.setattr(cluster_consistency.ctypes, "CDLL", lambda name: FakeNccl())
    result, failed = run_module(cluster_consistency.main, {}, check_mode=True)
    assert not failed and result["versions"]["nccl"] == "2.21.5"

    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(cluster_consistency.ctypes, "CDLL", missing)
    result, failed = run_module(cluster_consistency.main, {}, check_mode=True)
    assert not failed and result["versions"]["nccl"] is None


def test_required_components_are_checked(run_module):
    versions = {"gpu1": {"driver": "550.127.05"}, "gpu2": {}}
    result, failed = run_module(
        cluster_consistency.main, {"versions": versions, "components": ["driver"], "required": {"gpu2": ["driver"]}}
    )
    assert failed and result["checks"][0]["code"] == "VERSION_MISSING"
    result, failed = run_module(cluster_consistency.main, {"versions": versions, "required": {"gpu2": ["gpu"]}})
    assert failed and result["msg"] == (
        "required of gpu2 must be a list of: os, kernel, driver, cuda, nccl, slurm,"
        " pytorch, deepspeed, webdataset, scikit-learn, tensorflow, jax, ray"
    )


# Entries of the lab's training environment's site-packages (a few of them), and two look-alikes
# (jaxtyping, tensorboard_plugin_wit) that are not the frameworks they start like.
LAB_SITE_PACKAGES = [
    "torch",
    "torch-2.13.0+cpu.dist-info",
    "deepspeed",
    "deepspeed-0.19.8.dist-info",
    "webdataset",
    "webdataset-1.0.2.dist-info",
    "sklearn",
    "scikit_learn-1.9.1.dist-info",
    "numpy-2.4.6.dist-info",
    "jaxtyping-0.3.2.dist-info",
    "tensorboard_plugin_wit",
    "distutils-precedence.pth",
]


def test_collect_reads_the_training_frameworks_without_python(run_module, monkeypatch, tmp_path):
    site = tmp_path / "train" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    for name in LAB_SITE_PACKAGES:
        (site / name).mkdir()
    monkeypatch.setattr(cluster_consistency.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    monkeypatch.setattr(cluster_consistency, "CUDA_NVCC", str(tmp_path / "no-nvcc"))
    result, failed = run_module(cluster_consistency.main, {"python_env": str(tmp_path / "train")})
    assert not failed
    found = {
        k: result["versions"][k] for k in ("pytorch", "deepspeed", "webdataset", "scikit-learn", "tensorflow", "jax")
    }
    assert found == {
        "pytorch": "2.13.0+cpu",
        "deepspeed": "0.19.8",
        "webdataset": "1.0.2",
        "scikit-learn": "1.9.1",
        "tensorflow": None,  # tensorboard_plugin_wit is not tensorflow
        "jax": None,  # nor is jaxtyping jax
    }
    result, failed = run_module(cluster_consistency.main, {"python_env": str(tmp_path / "none")})
    assert not failed and result["versions"]["pytorch"] is None


def test_a_node_with_another_torch_or_none_fails(run_module):
    versions = {
        "gpu1": {"pytorch": "2.13.0+cu124"},
        "gpu2": {"pytorch": "2.13.0+cu124"},
        "gpu3": {"pytorch": "2.14.1+cu124"},
        "gpu4": {},
    }
    required = {host: ["pytorch"] for host in versions}
    result, failed = run_module(
        cluster_consistency.main,
        {"versions": versions, "components": ["pytorch"], "required": required, "fail_on": "never"},
    )
    assert not failed
    [check] = result["checks"]
    assert (check["check"], check["status"], check["code"]) == ("consistency.pytorch", "fail", "VERSION_MISMATCH")
    assert check["message"] == (
        "gpu3 runs 2.14.1+cu124; gpu4 reports none, though it must have one; the others run 2.13.0+cu124"
    )


def test_collect_reads_the_driver_from_nvidia_smi_under_a_deadline(run_module, monkeypatch, tmp_path):
    """Where /proc has no driver (a container), nvidia-smi answers with the VBIOS too; one that hangs: both unknown."""
    monkeypatch.setattr(cluster_consistency, "CUDA_NVCC", str(tmp_path / "no-nvcc"))
    monkeypatch.setattr(
        cluster_consistency.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: f"/usr/bin/{name}"
    )
    monkeypatch.setattr(cluster_consistency, "_read", lambda path: "")
    deadlines = []

    def run_with_deadline(cmd, seconds):
        deadlines.append((cmd, seconds))
        return answer

    monkeypatch.setattr(cluster_consistency, "run_with_deadline", run_with_deadline)
    answers = {}
    for answer in [
        (0, "550.127.05, 95.02.3C.40.B6\n550.127.05, 95.02.3C.40.B6\n", ""),
        (124, "", "nvidia-smi did not answer in 30 s"),
    ]:
        result, failed = run_module(
            cluster_consistency.main, {"smi_timeout": 5}, run_command=lambda *a, **k: (1, "", "")
        )
        assert not failed
        answers[answer[0]] = (result["versions"]["driver"], result["versions"]["vbios"])
    assert answers == {0: ("550.127.05", "95.02.3C.40.B6"), 124: (None, None)}
    query = ["/usr/bin/nvidia-smi", "--query-gpu=driver_version,vbios_version", "--format=csv,noheader"]
    assert deadlines[0] == (query, 5)
