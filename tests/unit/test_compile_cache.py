"""scripts/gpulab_compile_cache.py: what one process compiled, the next one loads; what differs compiles anew.

Each case runs in fresh interpreters (as Ansible's workers are), with the cache in a temporary directory and
the module imported before Jinja or Ansible, as the .venv's .pth line imports it."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The .venv's own copy was imported at start-up (its .pth line): set it aside for the tree's.
PRELUDE = """
import sys
installed = sys.modules.pop("gpulab_compile_cache", None)
if installed is not None and installed._Finder in sys.meta_path:
    sys.meta_path.remove(installed._Finder)
"""

JINJA = """
import json, sys
sys.path.insert(0, {scripts!r})
import gpulab_compile_cache
import jinja2
from jinja2.environment import Environment
generated = []
generate = Environment._generate
def counting_generate(self, *args, **kwargs):
    generated.append(1)
    return generate(self, *args, **kwargs)
Environment._generate = counting_generate
env = jinja2.Environment(variable_start_string={start!r}, variable_end_string={end!r})
rendered = env.from_string({template!r}).render(a=1)
rendered_again = env.from_string({template!r}).render(a=5)
expression = env.compile_expression("a * 3")(a=2)
print(json.dumps([rendered, rendered_again, expression, len(generated), Environment.compile.__name__]))
"""

PLUGIN = """
import builtins, json, sys
sys.path.insert(0, {scripts!r})
import gpulab_compile_cache
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[{collections!r}])._install()
compiled = []
real_compile = builtins.compile
def counting_compile(source, filename, *args, **kwargs):
    if str(filename).endswith("double.py"):
        compiled.append(filename)
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting_compile
from ansible_collections.testns.testcoll.plugins.filter import double
print(json.dumps([double.double(21), len(compiled), double.double.__code__.co_filename]))
"""


def run(script, cache, **env):
    settings = {**os.environ, "GPULAB_COMPILE_CACHE_DIR": str(cache), **env}
    out = subprocess.run(
        [sys.executable, "-c", PRELUDE + script], capture_output=True, text=True, check=True, env=settings
    )
    return json.loads(out.stdout)


def jinja(cache, template="{{ a + 1 }}/{% if a > 2 %}big{% endif %}", start="{{", end="}}", **env):
    script = JINJA.format(scripts=str(ROOT / "scripts"), template=template, start=start, end=end)
    return run(script, cache, **env)


def test_a_template_compiled_once_is_loaded_by_the_next_process_and_renders_the_same(tmp_path):
    first = jinja(tmp_path)
    assert first == ["2/", "6/big", 6, 2, "cached_compile"]  # the template once (memo), the expression once
    assert jinja(tmp_path) == ["2/", "6/big", 6, 0, "cached_compile"]
    assert len(list(tmp_path.iterdir())) == 2


def test_other_source_or_other_syntax_settings_compile_anew(tmp_path):
    jinja(tmp_path)
    assert jinja(tmp_path, template="{{ a + 2 }}")[3] == 1  # the expression is cached, the new template is not
    assert jinja(tmp_path, template="<< a + 1 >>/", start="<<", end=">>")[:2] == ["2/", "6/"]
    assert jinja(tmp_path, template="<< a + 1 >>/", start="<<", end=">>")[3] == 0
    assert jinja(tmp_path, start="<<", end=">>")[:2] == ["{{ a + 1 }}/", "{{ a + 1 }}/big"]  # other delimiters
    assert len(list(tmp_path.iterdir())) == 6


def test_turned_off_nothing_is_replaced_or_written(tmp_path):
    assert jinja(tmp_path / "cache", GPULAB_COMPILE_CACHE="off") == ["2/", "6/big", 6, 3, "compile"]
    assert not (tmp_path / "cache").exists()


def test_a_collection_plugin_is_compiled_once_then_loaded_until_its_source_changes(tmp_path):
    plugin = tmp_path / "ansible_collections" / "testns" / "testcoll" / "plugins" / "filter" / "double.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("def double(x):\n    return 2 * x\n")
    script = PLUGIN.format(scripts=str(ROOT / "scripts"), collections=str(tmp_path))
    cache = tmp_path / "cache"
    assert run(script, cache) == [42, 1, str(plugin)]
    assert run(script, cache) == [42, 0, str(plugin)]
    plugin.write_text("def double(x):\n    return x + x + 0\n")
    assert run(script, cache) == [42, 1, str(plugin)]


def test_preload_loads_this_trees_filters_and_the_lab_connection_in_the_calling_process():
    script = f"""
import json, sys
sys.path.insert(0, {str(ROOT / "scripts")!r})
import gpulab_compile_cache
gpulab_compile_cache.TREE = {str(ROOT)!r}
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([{str(ROOT / ".collections")!r}])
gpulab_compile_cache.preload()
prefixes = (
    "ansible_collections.gpulab.cluster.plugins.filter.",
    "ansible_collections.community.docker.plugins.connection.",
)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(prefixes))))
"""
    loaded = run(script, "/nonexistent-cache")
    files = sorted(p.stem for p in (ROOT / "plugins" / "filter").glob("*.py") if p.stem != "__init__")
    filters = [f"ansible_collections.gpulab.cluster.plugins.filter.{stem}" for stem in files]
    assert loaded == ["ansible_collections.community.docker.plugins.connection.docker", *filters]
