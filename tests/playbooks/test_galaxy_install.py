"""The collection as a user gets it from Galaxy: built, installed offline into an empty path beside the
collections the `ansible` package brings, every module and role entry point documented from there;
and galaxy.yml declares every collection the shipped content uses."""

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

import ansible_collections

ROOT = Path(__file__).resolve().parents[2]
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
SHIPPED = ("roles", "playbooks", "plugins", "meta")
FQCN = re.compile(r"\b([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)\.[a-z][a-z0-9_]*\b")


def installed_collections():
    """namespace.name of every collection beside ansible-core (the `ansible` package's)."""
    found = set()
    for base in map(Path, ansible_collections.__path__):
        found |= {f"{ns.name}.{name.name}" for ns in base.iterdir() if ns.is_dir() for name in ns.iterdir()}
    return found - {"gpulab.cluster"}


def used_collections():
    known = installed_collections()
    used = {}
    for top in SHIPPED:
        for path in (ROOT / top).rglob("*"):
            if path.suffix in (".yml", ".yaml", ".j2", ".py") and path.is_file():
                for name in set(FQCN.findall(path.read_text())) & known:
                    used.setdefault(name, str(path.relative_to(ROOT)))
    return used


def test_galaxy_yml_declares_every_collection_the_content_uses():
    used = used_collections()
    assert "community.crypto" in used and "ansible.posix" in used  # the scan sees what is there
    missing = {name: where for name, where in used.items() if name not in GALAXY["dependencies"]}
    assert missing == {}, f"used but not in galaxy.yml dependencies (name: first file): {missing}"


def run(*cmd, cwd, env):
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """An empty collections path with the built collection installed offline into it."""
    work = tmp_path_factory.mktemp("galaxy")
    (work / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(work / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    run("ansible-galaxy", "collection", "build", "--output-path", str(work), str(ROOT), cwd=work, env=env)
    tarball = work / f"gpulab-cluster-{GALAXY['version']}.tar.gz"
    path = work / "collections"
    out = run("ansible-galaxy", "collection", "install", "--offline", "-p", str(path), str(tarball), cwd=work, env=env)
    # Every dependency resolved offline, from the collections installed beside ansible-core.
    for name in GALAXY["dependencies"]:
        assert re.search(rf"'{re.escape(name)}:[^']+' is already installed", out), out
    return work, dict(env, ANSIBLE_COLLECTIONS_PATH=str(path))


def test_every_module_is_documented_from_the_installed_collection(installed):
    work, env = installed
    modules = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py"))
    out = run("ansible-doc", "-t", "module", *[f"gpulab.cluster.{m}" for m in modules], cwd=work, env=env)
    assert re.findall(r"^> MODULE gpulab\.cluster\.(\w+) \(.*/collections/ansible_collections/", out, re.M) == modules


def test_every_role_entry_point_is_documented_from_the_installed_collection(installed):
    work, env = installed
    roles = sorted(p.name for p in (ROOT / "roles").iterdir())
    out = run("ansible-doc", "-t", "role", *[f"gpulab.cluster.{r}" for r in roles], cwd=work, env=env)
    for role in roles:
        specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
        block = out.split(f"> ROLE: *gpulab.cluster.{role}* (", 1)[1].split("> ROLE:", 1)[0]
        assert "/collections/ansible_collections/gpulab/cluster)" in block.splitlines()[0]
        assert sorted(re.findall(r"^ENTRY POINT: \*(\S+)\* ", block, re.M)) == sorted(specs["argument_specs"])
