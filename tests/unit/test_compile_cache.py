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


# A module of a test collection built into its payload as Ansible does for a task; counts the syntax trees made.
MODULE_BUILD = """
import ast, base64, builtins, io, json, sys, tempfile, zipfile
sys.path.insert(0, {scripts!r})
import gpulab_compile_cache
trees = []
real_compile = builtins.compile
def counting_compile(source, filename, mode, flags=0, *args, **kwargs):
    if flags & ast.PyCF_ONLY_AST and str(filename).endswith(".py"):  # a source file, not a Jinja native value
        trees.append(str(filename))
    return real_compile(source, filename, mode, flags, *args, **kwargs)
builtins.compile = counting_compile
import ansible.constants as C
from ansible.executor import module_common
from ansible.plugins.loader import init_plugin_loader, module_loader
from ansible.template import Templar
init_plugin_loader([{collections!r}])
C.DEFAULT_LOCAL_TMP = tempfile.mkdtemp()  # Ansible's own per-run cache, empty as in a new run
context = module_loader.find_plugin_with_context("testns.testcoll.probe")
with open(context.plugin_resolved_path, "rb") as f:
    source = f.read()
module_common._find_module_utils(
    module_name="probe", b_module_data=source, module_path=context.plugin_resolved_path, module_args={{}},
    task_vars={{"ansible_python_interpreter": "/usr/bin/python3"}}, templar=Templar(loader=None),
    module_compression="ZIP_STORED", async_timeout=0, become_plugin=None, environment={{}})
import glob
kept = [p for p in glob.glob(C.DEFAULT_LOCAL_TMP + "/ansiballz_cache/*") if not p.endswith(".lock")]
zipdata = base64.b64decode(module_common._CachedModule.load(kept[0]).zip_data)
names = sorted(zipfile.ZipFile(io.BytesIO(zipdata)).namelist())
ours = [n for n in names if "testcoll" in n]
print(json.dumps([ours, len(names), len(trees), module_common.recursive_finder.__name__]))
"""


def build_module(collections, cache, **env):
    script = MODULE_BUILD.format(scripts=str(ROOT / "scripts"), collections=str(collections))
    return run(script, cache, **env)


def test_a_modules_utilities_are_found_without_parsing_them_again_until_one_changes(tmp_path):
    collection = tmp_path / "ansible_collections" / "testns" / "testcoll" / "plugins"
    (collection / "modules").mkdir(parents=True)
    (collection / "module_utils").mkdir()
    (collection / "modules" / "probe.py").write_text(
        "from ansible.module_utils.basic import AnsibleModule\n"
        "from ansible_collections.testns.testcoll.plugins.module_utils import first\n"
    )
    helper = collection / "module_utils" / "first.py"
    helper.write_text("VALUE = 1\n")
    (collection / "module_utils" / "second.py").write_text("VALUE = 2\n")
    utils = "ansible_collections/testns/testcoll/plugins/module_utils/"
    cache = tmp_path / "cache"
    uncached = build_module(tmp_path, tmp_path / "unused", GPULAB_COMPILE_CACHE="off")
    first = build_module(tmp_path, cache)
    again = build_module(tmp_path, cache)
    assert first[0] == again[0] == uncached[0] and utils + "first.py" in first[0]
    assert first[1] == again[1] == uncached[1]  # the same payload: every module utility Ansible itself finds
    assert first[2] == uncached[2] > 20 and again[2] == 0  # no source parsed once the walk is kept
    assert first[3] == "recursive_finder"
    helper.write_text("from ansible_collections.testns.testcoll.plugins.module_utils import second\n")
    changed = build_module(tmp_path, cache)
    assert utils + "second.py" in changed[0] and changed[2] == 2  # first.py walked anew, then second.py


YAML_LOAD = """
import json, sys
sys.path.insert(0, {scripts!r})
import gpulab_compile_cache
from ansible.plugins.loader import init_plugin_loader
from ansible.module_utils._internal._datatag import AnsibleTagHelper
init_plugin_loader([])
import ansible.plugins.loader as loader_module
from ansible._internal._datatag._tags import Origin, TrustedAsTemplate
text = Origin(path="/docs/x.py", line_num=3).tag(TrustedAsTemplate().tag({doc!r}))
from ansible.parsing.yaml.loader import AnsibleLoader
loaded = loader_module.yaml.load(text, Loader=AnsibleLoader)
loaded["options"]["mine"] = "changed by the caller"
again = loader_module.yaml.load(text, Loader=AnsibleLoader)
tags = sorted(repr(t) for t in AnsibleTagHelper.tags(again["options"]["size"]["description"]))
print(json.dumps([again["options"]["size"], "mine" in again["options"], tags, type(loader_module.yaml).__name__]))
"""


def test_plugin_documentation_is_parsed_once_and_each_caller_gets_its_own_copy(tmp_path):
    doc = "options:\n  size:\n    description: how big\n    type: int\n    default: 4\n"
    script = YAML_LOAD.format(scripts=str(ROOT / "scripts"), doc=doc)
    cache = tmp_path / "cache"
    expected = [
        {"description": "how big", "type": "int", "default": 4},
        False,
        ["Origin(path='/docs/x.py', line_num=5, col_num=18)", "TrustedAsTemplate()"],
        "_YamlProxy",
    ]
    assert run(script, cache) == expected
    assert len(list(cache.glob("y*"))) == 1
    assert run(script, cache) == expected  # loaded from the cache: the same values and tags
    assert run(script, tmp_path / "off", GPULAB_COMPILE_CACHE="off")[:3] == expected[:3]
    changed = YAML_LOAD.format(scripts=str(ROOT / "scripts"), doc=doc.replace("4", "8"))
    assert run(changed, cache)[0]["default"] == 8
    assert len(list(cache.glob("y*"))) == 2
