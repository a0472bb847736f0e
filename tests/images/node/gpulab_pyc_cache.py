"""Test nodes only (tests/images/node/install-pyc-cache.sh): keep the bytecode of code imported from zip files.

Ansible runs every task as a zip of the module and its module utilities, which Python imports with
zipimport; zipimport compiles each source anew and keeps nothing. On a test node that compile is a
third of a module run's CPU in a container and several seconds under QEMU's emulation. Here the
bytecode is kept in /var/cache/gpulab-pyc, keyed by the source's SHA-256 and the interpreter, and
loaded instead; the code objects take the file name of this import, so tracebacks name the right file.
Anything unexpected (no cache directory, not root, a Python without zipimport._compile_source) leaves
Python's own behaviour.
"""

import zipimport

CACHE = "/var/cache/gpulab-pyc"


def _install(compile_source):
    import marshal
    import os
    import sys

    tag = sys.implementation.cache_tag
    code_type = type(_install.__code__)

    def renamed(code, filename):
        consts = tuple(renamed(c, filename) if isinstance(c, code_type) else c for c in code.co_consts)
        return code.replace(co_filename=filename, co_consts=consts)

    def cached(pathname, source):
        import hashlib

        key = hashlib.sha256(source if isinstance(source, bytes) else source.encode()).hexdigest()
        path = os.path.join(CACHE, f"{key}.{tag}")
        try:
            with open(path, "rb") as f:
                return renamed(marshal.load(f), pathname)
        except (OSError, EOFError, ValueError, TypeError):
            pass
        code = compile_source(pathname, source)
        try:
            os.makedirs(CACHE, exist_ok=True)
            partial = f"{path}.{os.getpid()}"
            with open(partial, "wb") as f:
                marshal.dump(code, f)
            os.replace(partial, path)
        except OSError:
            pass
        return code

    zipimport._compile_source = cached


if hasattr(zipimport, "_compile_source"):
    _install(zipimport._compile_source)
