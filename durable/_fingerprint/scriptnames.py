"""Which file a script's functions come from, and the names that file
gives them: its stem (`flow` for `python flow.py`), and the module name an
`import` of it would have, when one can be told (`importable`)."""

from __future__ import annotations

import functools
import keyword
import os
import sys
import types
from typing import Any

# A script's module: `__main__`, or `__mp_main__` in a worker that
# multiprocessing started with spawn or forkserver (the default on macOS and
# Windows), which imports the parent's script again under that name.
_SCRIPT_MODULES = ("__main__", "__mp_main__")


def script_name(fn: object) -> str | None:
    """The file name (without `.py`) of the script that defines `fn` when it
    lives in `__main__` run from a file (`python flow.py`, `python -m flow`,
    `durable run flow.py:wf`), else None. Two scripts in one folder that both
    define `main` are two identities; the folder never counts. Notebook
    cells and `python -c` have no script file: their `__main__` keeps no
    name (a cell's file name changes on every kernel restart)."""
    module = getattr(fn, "__module__", None)
    code = getattr(fn, "__code__", None)
    script = _script_file(module)
    if script is None or not isinstance(code, types.CodeType):
        return None
    if _same_file(code.co_filename, script):
        return os.path.splitext(os.path.basename(script))[0]
    return None


def module_label(module: str) -> str:
    """A module's name as an argument digest spells it: the script's module
    by the name an import gives it (`importable`, as its functions are
    identified), else by the script's name, so that a class or function of
    `flow.py` is the same whether the script runs as `__main__`, in a spawn
    worker as `__mp_main__`, or is imported as `flow`; any other module (a
    notebook's `__main__` too) by its name."""
    script = _script_file(module)
    return module if script is None else importable(module) or os.path.splitext(os.path.basename(script))[0]


def importable(module: object) -> str | None:
    """The name an `import` gives the script's module (`__main__`, or a
    spawn worker's `__mp_main__`): `python -m pkg.flow`'s spec names it;
    `python flow.py` (or `durable run flow.py:wf`) is `flow` when its folder
    is on `sys.path` (the script's own folder is) and `flow` is a name an
    import can spell; `python pkg/flow.py` is `pkg.flow` when `pkg` is a
    package (`__init__.py`) whose folder's parent is on `sys.path`, as
    `import pkg.flow` names it. None when it cannot be told: the script's functions
    then keep an identity no import gives (`flow.py:wf`), so a run of
    theirs is never replayed as another module's."""
    main = sys.modules.get(module) if module in _SCRIPT_MODULES else None
    file = getattr(main, "__file__", None)
    if not isinstance(file, str):
        return None
    spec = getattr(getattr(main, "__spec__", None), "name", None)
    return _importable(file, spec if isinstance(spec, str) else None, tuple(sys.path))


@functools.lru_cache(maxsize=64)
def _importable(file: str, spec: str | None, path: tuple[str, ...]) -> str | None:
    if spec and spec not in _SCRIPT_MODULES:
        return spec if all(_spellable(p) for p in spec.split(".")) else None
    stem, ext = os.path.splitext(os.path.basename(file))
    if ext != ".py" or not _spellable(stem):
        return None
    # The file's path under a `sys.path` entry, each folder between them a
    # package (`__init__.py`): `pkg/flow.py` is `pkg.flow` as `import
    # pkg.flow` names it, not `flow` because the script's own folder leads
    # the path. The longest such name; none when no entry holds the file.
    entries = {os.path.realpath(p or os.curdir) for p in path}
    folder, parts, name = os.path.realpath(os.path.dirname(os.path.abspath(file))), [stem], None
    while True:
        if folder in entries:
            name = ".".join(reversed(parts))
        package = os.path.basename(folder)
        if not os.path.isfile(os.path.join(folder, "__init__.py")) or not _spellable(package):
            return name
        parts.append(package)
        folder = os.path.dirname(folder)


def _spellable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _script_file(module: object) -> str | None:
    if module not in _SCRIPT_MODULES:
        return None
    main_file = getattr(sys.modules.get(module), "__file__", None)
    return main_file if isinstance(main_file, str) else None


@functools.lru_cache(maxsize=256)
def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def public_name(obj: object) -> str:
    """`module.qualname` by the shortest module path that has it:
    `pathlib.Path`, not `pathlib._local.Path` (3.13), so that a run resumed
    under another Python version sees the same name."""
    module, qualname = str(getattr(obj, "__module__", "?")), str(getattr(obj, "__qualname__", "?"))
    parts = module.split(".")
    for i in range(1, len(parts)):
        found: object = sys.modules.get(".".join(parts[:i]))
        for attr in qualname.split("."):
            found = getattr(found, attr, None)
        if found is obj:
            return f"{'.'.join(parts[:i])}.{qualname}"
    return f"{module}.{qualname}"


def type_label(t: Any) -> str:
    """`module.Qualname` of a type, as fingerprints and argument digests
    kind a value by it: the script's module by `module_label`; a standard
    library class in a private module by its public name (`public_name`):
    `pathlib.PosixPath`, which 3.13 moved to `pathlib._local`, so that a
    Path digests alike on 3.10-3.13."""
    module = getattr(t, "__module__", None)
    if not isinstance(module, str):
        return f"?.{getattr(t, '__qualname__', repr(t))}"
    if "._" in module and module.partition(".")[0] in sys.stdlib_module_names:
        return public_name(t)
    return f"{module_label(module)}.{getattr(t, '__qualname__', repr(t))}"
