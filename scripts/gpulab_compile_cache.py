"""The controller's .venv only (`make setup` installs it): keep what Ansible compiles and parses, and load once.

Ansible runs each task on each host in a worker process forked for it. There it compiles, and loses
when the worker exits: every Jinja template string it templates (Jinja's own cache covers file
templates only), and the code of every collection plugin it loads (the collection loader compiles the
source and writes no bytecode). And every run parses again: its own settings' definitions (base.yml), each
collection's meta/runtime.yml, the documentation of each plugin it loads (where a plugin's settings are
defined) and, for each module it sends, the source of every module utility, to find what to send along.
Here all of it is kept in a directory:
- a template's code, keyed by everything the generated code depends on: the template's source (or the
  expression's syntax tree), the environment's syntax settings, Ansible's compile-time context, and the
  Jinja and Ansible code that generates it (with this tree's filter and test plugins, whose decorators
  shape the calls);
- a plugin's code, keyed by its source and file name;
- a YAML document's values, keyed by its text, its tags (file, line, trust) and the parser's version and
  code; each caller gets its own copy;
- the imports found in a module or module utility, keyed by its source (read anew each run) and the code
  that finds them.
And before the first play the parent process loads the builtin filters and tests, this tree's own and
the connection plugins (preload()), which each worker loaded again otherwise (more than half of a
worker's CPU, profiled on the lab, before the caches above). The same code runs as without any of this;
anything unexpected falls back to what it replaces.
GPULAB_COMPILE_CACHE=off turns it off; GPULAB_COMPILE_CACHE_DIR moves it (default ~/.cache/gpulab-compile).
"""

import contextlib
import functools
import os
import sys

_ENABLED = os.environ.get("GPULAB_COMPILE_CACHE", "on") != "off"
CACHE = os.environ.get("GPULAB_COMPILE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gpulab-compile")
TREE = os.path.dirname(sys.prefix)  # the collection's tree, which holds the .venv
CONNECTIONS = ("ansible.builtin.ssh", "ansible.builtin.local", "community.docker.docker")  # nodes, the lab
_JINJA_BITS = "ansible._internal._templating._jinja_bits"  # Ansible's Jinja environment, in Ansible's processes
_SETTINGS = (
    "block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
    "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
    "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized", "is_async",
)  # fmt: skip


def _tree_plugins(kind):
    """The file names of TREE's plugins of one kind (filter, test), sorted."""
    folder = os.path.join(TREE, "plugins", kind)
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return sorted(n for n in names if n.endswith(".py") and n != "__init__.py")


def _fingerprint():
    """What the generated code depends on besides the template: the code that generates it."""
    import hashlib

    import jinja2

    digest = hashlib.sha256(f"{sys.implementation.cache_tag} {jinja2.__version__}".encode())
    jinja_dir = os.path.dirname(jinja2.__file__)
    files = [os.path.join(jinja_dir, n) for n in ("compiler.py", "lexer.py", "parser.py", "nodes.py")]
    jinja_bits = sys.modules.get(_JINJA_BITS)
    if jinja_bits is not None:
        ansible_dir = os.path.dirname(jinja_bits.__file__)
        files += [os.path.join(ansible_dir, n) for n in ("_jinja_bits.py", "_jinja_plugins.py")]
    for kind in ("filter", "test"):
        files += [os.path.join(TREE, "plugins", kind, n) for n in _tree_plugins(kind)]
    digest.update(_file_bytes(*files))
    return digest


def _context():
    """Ansible's compile-time switches: backslash escaping (lexer) and embedded templates (code generator)."""
    jinja_bits = sys.modules.get(_JINJA_BITS)
    if jinja_bits is None:
        return "[]"
    current = jinja_bits._TemplateCompileContext.current(optional=True)  # pylint: disable=protected-access
    config = jinja_bits._TemplateConfig  # pylint: disable=protected-access
    return repr([getattr(current, "escape_backslashes", None), getattr(config, "allow_embedded_templates", None)])


def _cached(key, make, codec=None):
    """The value stored under key, else make()'s, stored for the next process. codec: marshal (code
    objects, plain data) unless given (pickle, for Ansible's tagged data)."""
    import marshal

    codec = codec or marshal
    path = os.path.join(CACHE, f"{key}.{sys.implementation.cache_tag}")
    try:
        with open(path, "rb") as f:
            return codec.load(f)
    except Exception:  # pylint: disable=broad-except  # missing, partial or unreadable: made anew
        pass
    value = make()
    partial = f"{path}.{os.getpid()}"
    try:
        os.makedirs(CACHE, exist_ok=True)
        with open(partial, "wb") as f:
            codec.dump(value, f)
        os.replace(partial, path)
    except Exception:  # pylint: disable=broad-except  # a value the codec cannot write is used unkept
        with contextlib.suppress(OSError):
            os.unlink(partial)
    return value


def _digest(*parts):
    """sha256 over parts (str or bytes), each one closed by a NUL."""
    import hashlib

    digest = hashlib.sha256()
    for part in parts:
        digest.update((part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass")) + b"\0")
    return digest.hexdigest()


def _file_bytes(*paths):
    """The contents of the files at paths, joined: code whose change must change a key."""
    chunks = []
    for path in paths:
        with open(path, "rb") as f:
            chunks.append(path.encode() + b"\0" + f.read())
    return b"\0".join(chunks)


def _install_jinja(module):
    from jinja2 import nodes

    compile_template = module.Environment.compile
    memo = {}
    state = {}

    def key_of(env, source, name, filename, defer_init):
        if isinstance(source, str):
            text = f"s{type(source).__qualname__}\0{source}"
        elif isinstance(source, nodes.Template):
            # Code generation looks at the exact type of each constant (a tagged str is not a str).
            types = [type(node.value).__qualname__ for node in source.find_all(nodes.Const)]
            text = f"n{types}\0{source!r}"
            if " at 0x" in text:  # a value without a faithful repr
                return None
        else:
            return None
        if not isinstance(env.autoescape, bool) or getattr(env, "_debuggable_template_source", False):
            return None
        in_ansible = _JINJA_BITS in sys.modules  # its code joins the fingerprint
        if in_ansible not in state:
            state[in_ansible] = _fingerprint()
        digest = state[in_ansible].copy()
        settings = [type(env).__module__, type(env).__qualname__, env.code_generator_class.__qualname__, env.autoescape]
        settings += [getattr(env, s) for s in _SETTINGS] + [sorted(env.extensions), name, filename, defer_init]
        digest.update(repr(settings).encode() + _context().encode() + b"\0" + text.encode("utf-8", "surrogatepass"))
        return "j" + digest.hexdigest()

    def cached_compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        def make():
            return compile_template(self, source, name, filename, raw, defer_init)

        try:
            key = None if raw else key_of(self, source, name, filename, defer_init)
        except Exception:  # pylint: disable=broad-except  # never let the cache fail a run
            key = None
        if key is None:
            return make()
        if key not in memo:
            memo[key] = _cached(key, make)
        return memo[key]

    module.Environment.compile = cached_compile


def _install_collection_loader(module):
    loader = module._AnsibleCollectionPkgLoaderBase  # pylint: disable=protected-access
    get_code = loader.get_code

    def cached_get_code(self, fullname):
        if self._compiled_code:  # pylint: disable=protected-access
            return self._compiled_code  # pylint: disable=protected-access
        try:
            filename = self.get_filename(fullname) or "<string>"
            source = self.get_source(fullname)
        except Exception:  # pylint: disable=broad-except
            return get_code(self, fullname)
        if source is None:
            return get_code(self, fullname)
        key = "p" + _digest(filename, source)
        self._compiled_code = _cached(key, lambda: get_code(self, fullname))  # pylint: disable=protected-access
        return self._compiled_code  # pylint: disable=protected-access

    loader.get_code = cached_get_code

    # Each collection's meta/runtime.yml (ansible.builtin's routing table is the longest), parsed in every
    # process that resolves a plugin name: plain strings, lists and dicts, kept by their text.
    to_dict = module._meta_yml_to_dict  # pylint: disable=protected-access
    if to_dict is not None:

        def cached_to_dict(yaml_string_data, content_id):
            data = yaml_string_data if isinstance(yaml_string_data, bytes) else str(yaml_string_data).encode()
            return _cached("r" + _digest(_yaml_version(), data), lambda: to_dict(yaml_string_data, content_id))

        module._meta_yml_to_dict = cached_to_dict  # pylint: disable=protected-access


def _install_module_deps(module):
    """Ansible finds the module utilities a module needs by parsing each one's source into a syntax tree and
    walking its imports, again in every run for every module: keep what the walk found, keyed by the source
    (read anew each time, so a changed file is walked anew) and the walker's own code."""
    compile_ast = module._compile_module_ast  # pylint: disable=protected-access
    finder_class = module.ModuleDepFinder
    walker = _file_bytes(module.__file__)

    class LazyTree:
        """The source, compiled only when something besides the walk needs its tree."""

        def __init__(self, name, source):
            self.name, self.source, self._tree = name, source, None

        def real(self):
            if self._tree is None:
                self._tree = compile_ast(self.name, self.source)
            return self._tree

        def __getattr__(self, attr):
            return getattr(self.real(), attr)

    class Found:  # what ModuleDepFinder leaves for recursive_finder
        def __init__(self, submodules, optional_imports):
            self.submodules, self.optional_imports = submodules, optional_imports

    def walk(module_fqn, tree, is_pkg_init=False):
        if not isinstance(tree, LazyTree):
            return finder_class(module_fqn, tree, is_pkg_init)
        key = "m" + _digest(walker, module_fqn, repr(bool(is_pkg_init)), tree.source)

        def make():
            found = finder_class(module_fqn, tree.real(), is_pkg_init)
            return (set(found.submodules), set(found.optional_imports))

        return Found(*_cached(key, make))  # new sets either way: made, or unmarshalled

    # recursive_finder alone sees the stand-ins (ModuleDepFinder's own super() call needs the real class): a copy
    # of it over the module's names as they are once loaded (Ansible assigns none of them later).
    import types

    finder = module.recursive_finder
    names = {**vars(module), "_compile_module_ast": LazyTree, "ModuleDepFinder": walk}
    cached_finder = types.FunctionType(finder.__code__, names, finder.__name__, finder.__defaults__, finder.__closure__)
    cached_finder.__kwdefaults__ = finder.__kwdefaults__
    module.recursive_finder = cached_finder


def _yaml_version():
    import yaml

    return f"{yaml.__version__} {getattr(yaml, '__with_libyaml__', False)}"


def _cached_yaml_load(load, fingerprint):
    """load (yaml.load's shape), its result kept by the document's text, its tags (source file, line, trust),
    the loader and the fingerprint; fresh objects on each call, so a caller may change what it gets."""
    import pickle

    def cached_load(stream, Loader=None, **kwargs):  # noqa: N803  # yaml.load's own keyword
        if isinstance(stream, (str, bytes)) and not kwargs:
            from ansible.module_utils._internal._datatag import AnsibleTagHelper

            tags = sorted(repr(tag) for tag in AnsibleTagHelper.tags(stream))
            loader = f"{getattr(Loader, '__module__', '')}.{getattr(Loader, '__qualname__', Loader)}"
            key = "y" + _digest(fingerprint, loader, repr(tags), type(stream).__qualname__, stream)
            return _cached(key, lambda: load(stream, Loader=Loader), codec=pickle)
        return load(stream, Loader=Loader, **kwargs) if Loader is not None else load(stream, **kwargs)

    return cached_load


@functools.cache
def _yaml_fingerprint():
    """The code that turns YAML into Ansible's tagged values (once per process: two modules' proxies use it)."""
    import ansible

    ansible_dir = os.path.dirname(ansible.__file__)
    files = [os.path.join(ansible_dir, "_internal", "_yaml", n) for n in ("_loader.py", "_constructor.py")]
    return f"{ansible.__version__} {_yaml_version()} ".encode() + _file_bytes(*files)


class _YamlProxy:
    """A stand-in for the yaml module in one Ansible module: load() cached, the rest yaml's own."""

    def __init__(self, yaml):
        self._yaml = yaml
        self.load = _cached_yaml_load(yaml.load, _yaml_fingerprint())

    def __getattr__(self, attr):
        return getattr(self._yaml, attr)


def _install_config_yaml(module):
    """Ansible's own settings' definitions (config/base.yml), read at every start."""
    yaml_load = module.yaml_load

    def cached_yaml_load(stream):
        path = getattr(stream, "name", None)
        if not isinstance(path, (str, bytes)):
            return yaml_load(stream)
        data = stream.read()
        return _cached("c" + _digest(_yaml_version(), os.fsencode(path), data), lambda: yaml_load(data))

    module.yaml_load = cached_yaml_load


def _install_plugin_docs_yaml(module):
    """Plugin documentation (settings' definitions) and its fragments: YAML parsed in every run."""
    module.yaml = _YamlProxy(module.yaml)


def _tree_collection():
    """(namespace, name) of the collection in TREE, from its galaxy.yml."""
    import re

    with open(os.path.join(TREE, "galaxy.yml"), encoding="utf-8") as f:
        fields = dict(re.findall(r"^(namespace|name):\s*([A-Za-z0-9_]+)\s*$", f.read(), re.M))
    return fields["namespace"], fields["name"]


def preload():
    """Load the builtin filters and tests, those of the collection in TREE, and the CONNECTIONS."""
    import importlib

    from ansible.plugins.loader import connection_loader, filter_loader, test_loader

    filter_loader.get("ansible.builtin.bool")  # loads every builtin filter file
    test_loader.get("ansible.builtin.match")  # and every builtin test file
    for connection in CONNECTIONS:  # with its settings' definitions, read from its documentation
        connection_loader.get(connection, class_only=True)
    namespace, name = _tree_collection()
    for kind in ("filter", "test"):
        for file_name in _tree_plugins(kind):
            importlib.import_module(f"ansible_collections.{namespace}.{name}.plugins.{kind}.{file_name[:-3]}")


def _install_preload(module):
    """Before the first play, preload() in the parent: the workers inherit the loaded plugins."""
    run = module.TaskQueueManager.run
    pending = [True]

    def run_after_preload(self, *args, **kwargs):
        if pending:
            pending.clear()
            with contextlib.suppress(Exception):  # each worker then loads them, as without this
                preload()
        return run(self, *args, **kwargs)

    module.TaskQueueManager.run = run_after_preload


_INSTALLERS = {
    "jinja2.environment": _install_jinja,
    "ansible.utils.collection_loader._collection_finder": _install_collection_loader,
    "ansible.executor.task_queue_manager": _install_preload,
    "ansible.executor.module_common": _install_module_deps,
    "ansible.config.manager": _install_config_yaml,
    "ansible.plugins.loader": _install_plugin_docs_yaml,
    "ansible.utils.plugin_docs": _install_plugin_docs_yaml,
}


class _Finder:
    """Installs each cache when its module is first imported, so that other programs pay nothing."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):  # pylint: disable=unused-argument
        install = _INSTALLERS.pop(fullname, None)
        if install is None:
            return None
        import importlib.util

        sys.meta_path.remove(_Finder)  # the module's own spec, found without this finder
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            if _INSTALLERS:
                sys.meta_path.insert(0, _Finder)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_install(module):
            exec_module(module)
            with contextlib.suppress(Exception):  # then without the cache
                install(module)

        spec.loader.exec_module = exec_and_install
        return spec


if _ENABLED and not any(name in sys.modules for name in _INSTALLERS):
    sys.meta_path.insert(0, _Finder)
