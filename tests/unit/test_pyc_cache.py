"""tests/images/node/gpulab_pyc_cache.py: code imported from a zip is compiled once, then loaded from the cache.

Each import runs in a fresh interpreter (as each Ansible task does), with the cache directory pointed
at a temporary one; a payload zip is written anew for each, at a new path, as Ansible's are."""

import subprocess
import sys
import zipfile
from pathlib import Path

CACHE_MODULE = Path(__file__).resolve().parents[1] / "images" / "node" / "gpulab_pyc_cache.py"

IMPORT = """
import sys, zipimport
sys.path.insert(0, {images!r})
if {cache!r}:
    import gpulab_pyc_cache
    gpulab_pyc_cache.CACHE = {cache!r}
compiled = []
import builtins
real_compile = builtins.compile
def counting_compile(*args, **kwargs):
    compiled.append(args[1])
    return real_compile(*args, **kwargs)
builtins.compile = counting_compile
sys.path.insert(0, {payload!r})
import payload_mod
print(payload_mod.answer(), len(compiled), payload_mod.answer.__code__.co_filename)
"""


def run_import(tmp_path, name, source, cache):
    payload = tmp_path / name / "payload.zip"
    payload.parent.mkdir()
    with zipfile.ZipFile(payload, "w") as zf:
        zf.writestr("payload_mod.py", source)
    script = IMPORT.format(images=str(CACHE_MODULE.parent), cache=str(cache or ""), payload=str(payload))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    value, compiles, filename = out.split()
    return {"value": value, "compiles": int(compiles), "filename": filename, "payload": payload}


def test_the_second_import_loads_the_bytecode_and_names_its_own_file(tmp_path):
    cache = tmp_path / "cache"
    source = "def answer():\n    return 42\n"
    first = run_import(tmp_path, "first", source, cache)
    assert (first["value"], first["compiles"]) == ("42", 1)
    assert len(list(cache.iterdir())) == 1
    second = run_import(tmp_path, "second", source, cache)
    assert (second["value"], second["compiles"]) == ("42", 0)  # nothing compiled: the bytecode came from the cache
    assert second["filename"] == str(second["payload"] / "payload_mod.py")  # not the first payload's path


def test_a_changed_source_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    run_import(tmp_path, "first", "def answer():\n    return 1\n", cache)
    second = run_import(tmp_path, "second", "def answer():\n    return 2\n", cache)
    assert (second["value"], second["compiles"]) == ("2", 1)
    assert len(list(cache.iterdir())) == 2


def test_an_unwritable_cache_leaves_pythons_own_behaviour(tmp_path):
    source = "def answer():\n    return 7\n"
    plain = run_import(tmp_path, "plain", source, None)["compiles"]  # zipimport alone compiles twice
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    for name in ("first", "second"):
        run = run_import(tmp_path, name, source, blocker / "cache")
        assert (run["value"], run["compiles"]) == ("7", plain)
