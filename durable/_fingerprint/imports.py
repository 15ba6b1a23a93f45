"""Modules a function imports inside its body, and the objects those
imports will bind, told the same whether or not the module is already
imported: a fingerprint (and a workflow's reach) must not depend on what
else the process happened to import first.

Only the user's own modules are resolved (imported if need be: they are
code the function runs anyway). A library is never imported just to be
fingerprinted, and so, for the same fingerprint in every process, nothing
a library module holds counts through an import in a body, even when it is
loaded already; its import statement counts, as part of the source."""

from __future__ import annotations

import ast
import dis
import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from .modfiles import works_at_import
from .nodes import walk
from .reach import _MISSING, code_objects
from .userfiles import is_user_file

_LEVELS = ("LOAD_CONST", "LOAD_SMALL_INT")  # how the level of a relative import is pushed


def local_imports(nodes: tuple[ast.AST, ...], globs: Mapping[str, Any]) -> dict[str, object]:
    """Names bound by `import` statements inside the function, to the objects
    they will be bound to (`from mypkg.helpers import clean` in a step body
    makes `clean` a helper; from the user's own modules only)."""
    package = str(globs.get("__package__") or "")
    found = body_imports(nodes, package)
    return {name: imported_value(module, attr) for name, module, attr in found if works_at_import(module) is None}


def working_imports(nodes: tuple[ast.AST, ...], package: str) -> dict[str, str]:
    """The modules the function's own import statements name whose file does
    work at import (`import train` of a `train.py` training at top level),
    by their text and their imports' (`works_at_import`): the body imports
    them when it runs, a fingerprint never does (`import_user_module`).
    Loaded or not, the same count: the body's own run loads it, and a
    completed run called again in that process must not look changed."""
    found = {m: works_at_import(m) for _, m, _ in body_imports(nodes, package)}
    return {f"named-file:{m}": digest for m, digest in found.items() if digest is not None}


@lru_cache(maxsize=4096)
def body_imports(nodes: tuple[ast.AST, ...], package: str) -> list[tuple[str, str, str | None]]:
    return [t for node in nodes for sub in walk(node) for t in imported_names(sub, package)]


def imported_value(module: str, attr: str | None) -> object:
    """What `import module` (attr None: binds the top package), `import
    module as x` (attr "") or `from module import attr` binds, or
    `_MISSING` for a library or a module that cannot be imported now."""
    value = import_user_module(module)
    if value is _MISSING:
        return value
    if attr is None:  # `import a.b` binds `a`
        return sys.modules.get(module.partition(".")[0], _MISSING)
    if not attr:
        return value
    found = getattr(value, attr, _MISSING)
    return found if found is not _MISSING else import_user_module(f"{module}.{attr}")


_IMPORTERS = frozenset({"import_module", "__import__"})
_HEAD = "<import>"  # a chain's head naming the module such a call returns


def spelled_import(node: ast.AST) -> tuple[str, str | None] | None:
    """What a call importing a module by its name binds, as `imported_value`
    takes it: `importlib.import_module("p.helpers")` as `import p.helpers as
    x` (attr ""), `__import__("p.helpers")` as `import p.helpers` (attr
    None: it returns `p`). ("", "") when the name is not spelled in the
    text (a variable, a relative name, more arguments): a module not told;
    None for any other expression."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else ""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "importlib":
        name = func.attr
    if name not in _IMPORTERS:
        return None
    first = node.args[0] if len(node.args) == 1 and not node.keywords else None
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str) or first.value.startswith("."):
        return "", ""
    return first.value, "" if name == "import_module" else None


def untold_import(func: ast.AST) -> bool:
    """Whether `func` is a function of a module imported by a name not
    spelled in the text (`import_module(name).setup`, `__import__(name).cfg.load`):
    a function of any module of the user's."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return spelled_import(func) == ("", "")


def module_imported(node: ast.AST) -> object:
    """The module a call importing one by its spelled name returns (the
    user's, imported if need be); `_MISSING` for a library's, a name not
    spelled, or any other expression."""
    spelled = spelled_import(node)
    return imported_value(*spelled) if spelled and spelled[0] else _MISSING


def import_head(node: ast.AST) -> str | None:
    """A chain's head standing for `module_imported(node)` (dots kept out:
    chains are joined by them), None unless `node` spells one."""
    spelled = spelled_import(node)
    if not spelled or not spelled[0]:
        return None
    return _HEAD + ("=" if spelled[1] == "" else "") + spelled[0].replace(".", "/")


def head_module(head: str) -> object:
    """The module an `import_head` head stands for; `_MISSING` for another name."""
    if not head.startswith(_HEAD):
        return _MISSING
    name = head[len(_HEAD) :]
    return imported_value(name.lstrip("=").replace("/", "."), "" if name.startswith("=") else None)


def import_user_module(name: str) -> object:
    """The user's module `name`, imported if need be; `_MISSING` for a
    library's, loaded or not (see the module docstring)."""
    module = sys.modules.get(name)
    if module is not None:
        return module if user_module(module) else _MISSING
    if not _user_package(name.partition(".")[0]):
        return _MISSING
    if works_at_import(name) is not None:  # its work is never run to fingerprint: by its text (`working_imports`)
        return _MISSING
    try:
        return importlib.import_module(name)
    except Exception:  # the body will raise it when it runs; nothing to follow now
        return _MISSING


# Builtins through which a function reads any global of its own module by a
# string built at run time (`globals()[name]`, `eval(text)`).
WHOLE_MODULE = frozenset({"globals", "eval", "exec"})


def own_module(namespace: Mapping[str, Any], builtins: frozenset[str]) -> object:
    """The module whose namespace a function's globals are (a notebook's
    `__main__` too), when it calls one of those `builtins` (of `WHOLE_MODULE`)
    that its module does not shadow; else `_MISSING`."""
    if all(n in namespace for n in builtins):
        return _MISSING
    return namespace_module(namespace)


def namespace_module(namespace: Mapping[str, Any]) -> object:
    """The module whose namespace this is, else `_MISSING`."""
    name = namespace.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    return module if module is not None and vars(module) is namespace else _MISSING


def user_module(module: types.ModuleType) -> bool:
    top = module.__name__.partition(".")[0]
    filename = getattr(module, "__file__", None)
    if isinstance(filename, str):
        return is_user_file(filename, top)
    # A namespace package (no __init__.py) has no file, only its folders.
    places = [p for p in getattr(module, "__path__", None) or () if isinstance(p, str)]
    return bool(places) and all(is_user_file(os.path.join(p, "__init__.py"), top) for p in places)


def library_module(value: object) -> bool:
    """Whether `value` is a library's module (`os`, `json`), which counts by
    its name (`content._module`): what a step does through it (`os.remove(p)`)
    changes no data of the program's. Not one of the user's own, nor one
    the program made (`run_time_module`): their globals hold its data."""
    return isinstance(value, types.ModuleType) and not user_module(value) and not run_time_module(value)


def run_time_module(module: types.ModuleType) -> bool:
    """A module the program made (`types.ModuleType("settings")`, which a
    config loader executes a settings file into): no file, no import spec,
    not built in. A library's module has a file or a spec, and counts by
    its name."""
    made = getattr(module, "__spec__", None) is None and not hasattr(module, "__file__")
    return made and module.__name__ not in sys.builtin_module_names


def _user_package(top: str) -> bool:
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    places = [spec.origin, *(spec.submodule_search_locations or [])]
    path = next((p for p in places if p and p not in ("built-in", "frozen")), None)
    return path is not None and is_user_file(path, top)


def absolute(module: str, level: int, package: str) -> str:
    if not level:
        return module
    try:
        return importlib.util.resolve_name("." * level + module, package)
    except (ImportError, ValueError):
        return ""


def body_modules(code: types.CodeType, package: str) -> Iterator[types.ModuleType]:
    """The user's modules that import statements in this code (and the
    functions nested in it) bind, told from the bytecode alone: `import a.b`
    yields `a` and `a.b`; `from a import f` yields `a`, whose `f` the caller
    finds among the code's names."""
    for name in _import_names(code, package):
        found = import_user_module(name)
        if isinstance(found, types.ModuleType):
            yield found


@lru_cache(maxsize=4096)
def _import_names(code: types.CodeType, package: str) -> tuple[str, ...]:
    """Absolute names of the modules the code imports (read once per code
    object: a workflow's reach is taken at every call)."""
    names: dict[str, None] = {}
    for co in code_objects(code):
        previous: list[dis.Instruction] = []
        for ins in dis.get_instructions(co):
            if ins.opname == "IMPORT_NAME" and isinstance(ins.argval, str):
                name = absolute(ins.argval, _level(previous), package)
                if name:
                    names.update(dict.fromkeys((name.partition(".")[0], name)))
            previous = [*previous[-1:], ins]
    return tuple(names)


def _level(before: list[dis.Instruction]) -> int:
    """The level an IMPORT_NAME was given: pushed two instructions before it."""
    ins = before[-2] if len(before) == 2 else None
    if ins is not None and ins.opname in _LEVELS and isinstance(ins.argval, int):
        return ins.argval
    return 0


def imported_names(node: ast.AST, package: str) -> Iterator[tuple[str, str, str | None]]:
    """(local name, module, attribute) for each name an import binds; the
    attribute is None for `import a.b` (binds `a`) and "" for
    `import a.b as x` (binds `a.b`)."""
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:  # `import a.b as x` binds `a.b`
                yield a.asname, a.name, ""
            else:
                yield a.name.partition(".")[0], a.name, None
    elif isinstance(node, ast.ImportFrom):
        module = absolute(node.module or "", node.level, package)
        for a in node.names:
            if a.name != "*" and module:
                yield a.asname or a.name, module, a.name


def user_class(cls: type) -> bool:
    """A class defined in the user's own code (a notebook's too), or one
    `made_by_new_class`, whose maker cannot be told (fail closed)."""
    name = getattr(cls, "__module__", "") or ""
    if name == "types" and made_by_new_class(cls):
        return True
    module = sys.modules.get(name)
    if name == "__main__" and not isinstance(getattr(module, "__file__", None), str):
        return True  # a notebook's classes: IPython's main module has no file
    if module is not None and not isinstance(module, types.ModuleType):
        return _replaced_by_user(cls, name)
    return module is not None and user_module(module)


def _replaced_by_user(cls: type, name: str) -> bool:
    """A class of a module that put an object in its place in `sys.modules`
    (`sys.modules[__name__] = _Settings()`, lazy settings): the user's when
    a function it defines lies in the user's file, or when none tells (fail
    closed: its methods are then followed)."""
    files = [f.__code__.co_filename for f in vars(cls).values() if isinstance(f, types.FunctionType)]
    files += [p.fget.__code__.co_filename for p in vars(cls).values()
              if isinstance(p, property) and isinstance(p.fget, types.FunctionType)]  # fmt: skip
    top = name.partition(".")[0]
    return not files or any(is_user_file(f, top) for f in files)


def made_by_new_class(cls: type) -> bool:
    """A class `types.new_class` made (also `dataclasses.make_dataclass` on
    3.10 and 3.11): its `__module__` is `types`, which does not hold it,
    whoever called it. Taken for the standard library's, such a class of a
    script (`Made = make_dataclass("Made", [("k", int, field(default=K))])`)
    counted by its statement's text alone, whatever `K` the environment gave."""
    return getattr(cls, "__module__", None) == "types" and getattr(types, cls.__qualname__, None) is not cls
