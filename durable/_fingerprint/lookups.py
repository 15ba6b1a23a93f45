"""Modules a function reads as a whole because it names no global of them:
it finds them by a string at run time.

Pure standard library. `globals()[name]` and `eval(text)` read any global
of the function's own module. So does a lookup of a module by name:
`sys.modules[__name__].helper`, `importlib.import_module("plugins").run`,
`__import__(name)`, `inspect.getmodule(f)`, a frame's or a function's
globals (`sys._getframe().f_globals[name]`, `fn.__globals__`): no chain of names in the source
leads to what it calls, and counted by its names alone, the step was served
what the old helper gave after the helper was edited. Such a function reads
its own module whole, and every module of the user's that a string in its
code names (imported if need be, as an import in a body is: `imports`).
A function that looks modules up by a name in data (`import_module(
MODS["p"])`), calls a library's locator (Hydra's `get_method`, Django's
`import_string`, by its name) or a helper of the user's that looks modules
up (`loader.load(MODS["p"])`) counts the modules the plain data it reads
names too (without its own module whole, for the latter two). Whatever
the function, a string of its code naming an attribute of a module of the
user's (`"plugmod.run"`, `"plugmod:run"`) counts that module whole: such a
string is handed to a `locate`-like helper that imports it. A module whose
file does work at import is never imported for a string: it counts by its
file's text (`modfiles.works_at_import`). A name built
at run time from other strings (`"plugins." + kind`, `f"plugins.{name}"`, `"tools.%s" % kind`)
counts every module file of the package it names, or that the function
names (`pkgutil.iter_modules(plugins.__path__)`), by its text
(`packagefiles`)."""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .builtnames import built_parts, named_elsewhere
from .imports import WHOLE_MODULE, import_user_module, namespace_module, own_module, user_module
from .modfiles import UNTOLD, file_of, top_names, works_at_import
from .packagefiles import package_parts, script_parts
from .reach import _MISSING, _SCRIPT_MODULES, code_objects
from .values import hash_tokens
from .witness import witnessed

# Attributes that are a module's namespace (`frame.f_globals`, `fn.__globals__`).
_NAMESPACES = frozenset({"f_globals", "__globals__"})


def whole_modules(
    code: types.CodeType, chains: list[tuple[str, ...]], globs: Mapping[str, Any], names: set[str]
) -> Iterator[tuple[str, types.ModuleType | None, str]]:
    """(key, module, "") for each module the function reads whole, (key,
    module, attr) for each attribute of one a string names, (key, None,
    digest) for a module a string names whose file does work at import
    (`attribute_modules`); `chains` are
    the dotted names its source reads, `names` those it looks up."""
    read = [c for c in chains if c[0] in names]  # not `df.eval(...)`, nor a local
    whole = WHOLE_MODULE & {c[0] for c in read}
    finds = any(_finds_modules(c, globs) for c in read) or not names.isdisjoint(_NAMESPACES)
    objs = [_walked(c, globs) for c in read]
    helped = finds or _names_finder(code) or any(witnessed(_helper_finds, o) for o in objs if type(o) is types.FunctionType)
    # Not `sys.modules` itself, the finder `sys.modules[name]` reads: its keys are no data of the step's.
    data = tuple(s for o in objs if isinstance(o, _DATA) and o is not sys.modules for s in witnessed(data_strings, o)) if helped else ()
    if UNTOLD in data:  # data too large to look through: counts as changed in each new process
        yield "named-file:", None, UNTOLD
        data = data[:-1]
    own = witnessed(own_module, globs, whole) if whole else None
    # `import_module(os.environ["PLUGIN_A"])`: the module it names now, not its own module, whole.
    elsewhere = witnessed(named_elsewhere, code, globs) if finds and not isinstance(own, types.ModuleType) else None
    if finds and not isinstance(own, types.ModuleType) and elsewhere is None:
        own = witnessed(namespace_module, globs)
    if isinstance(own, types.ModuleType):
        yield "globals()", own, ""
    found = witnessed(named_modules, code, str(globs.get("__package__") or "")) if finds else ()
    found = (*found, *((m, "", None) for m in elsewhere or ()))
    texts = dotted_strings(code, data, helped)
    named = (*found, *(witnessed(attribute_modules, texts) if texts else ()))
    for module in dict.fromkeys(m for m, attr, _ in named if m is not None and not attr):
        if module is not own:
            yield module.__name__, module, ""
    for module, attr, digest in named:
        if module is None:  # `"train.run"` of a file that does work at import: by its text
            yield f"named-file:{attr}", None, str(digest)
        elif attr:  # `"plugmod.run"`: what it names, as if the code named it
            yield f"named:{module.__name__}.", module, attr
    heads = [*objs, *(globs.get(c[0]) for c in read)]  # `plugins` of `plugins.__path__`
    for key, texts in witnessed(package_parts, code, heads) if finds else ():  # `import_module(f"plugins.{name}")`
        yield key, None, texts
    # `import_module("handlers_" + kind)`; `find_spec("spec_" + kind)` then `exec_module`, no module read whole for it
    for key, texts in witnessed(built_parts, code, globs) if finds or "find_spec" in names else ():
        yield key, None, texts
    home = os.path.dirname(str(globs.get("__file__") or ""))
    for key, texts in witnessed(script_parts, code, objs, home):  # `runpy.run_path("conf/exp.py")`
        yield key, None, texts


def _finds_modules(chain: tuple[str, ...], globs: Mapping[str, Any]) -> bool:
    """Whether the chain (`sys.modules`, `importlib.import_module`) reaches
    a lookup of modules by name; only modules' attributes are walked."""
    finders: tuple[object, ...] = (sys.modules, builtins.__import__, importlib.import_module)
    finders += (inspect.getmodule, inspect.currentframe, sys._getframe)  # `.f_globals[name]`
    obj = globs.get(chain[0], _MISSING)
    if obj is _MISSING:
        obj = vars(builtins).get(chain[0], _MISSING)
    for attr in chain[1:]:
        if any(obj is f for f in finders) or not isinstance(obj, types.ModuleType):
            break
        obj = vars(obj).get(attr, _MISSING)
    return any(obj is f for f in finders)


# Names in a function's code by which it (or a library it calls: Hydra's
# `get_method`, `instantiate`, Django's `import_string`) looks modules up:
# by name, as a helper's chains are not at hand without its source; more
# names than needed count more modules, never fewer.
# Not `modules` (`model.modules()` is no lookup): a name in data is imported.
_FINDERS = frozenset({
    "import_module", "__import__", "resolve_name", "locate", "get_method", "get_class",
    "get_object", "instantiate", "import_string", "load_object", "find_spec",
})  # fmt: skip
_DATA = (str, tuple, list, dict, set, frozenset)


def _walked(chain: tuple[str, ...], globs: Mapping[str, Any]) -> object:
    """What the chain names, through modules' attributes only."""
    obj = globs.get(chain[0], _MISSING)
    for attr in chain[1:]:
        if not isinstance(obj, types.ModuleType):
            break
        obj = vars(obj).get(attr, _MISSING)
    return obj


def _names_finder(code: types.CodeType) -> bool:
    return any(not _FINDERS.isdisjoint(co.co_names) for co in code_objects(code))


def _helper_finds(obj: object) -> bool:
    """Whether `obj` is a function of the user's that looks modules up."""
    code = getattr(obj, "__code__", None) if isinstance(obj, types.FunctionType) else None
    if not isinstance(code, types.CodeType) or not isinstance(obj, types.FunctionType):
        return False
    module = sys.modules.get(str(obj.__module__))
    if module is None or not user_module(module):
        return False
    return _names_finder(code)


def data_strings(
    obj: object, budget: int = 4096, held: Callable[[object], Iterable[object] | None] | None = None
) -> tuple[str, ...]:
    """The strings in plain data (`MODS = {"p": "plugmod"}`), at most
    `budget` items looked at; past it, `UNTOLD` too (`whole_modules`).
    `held`: what another item holds, to look through too (None: nothing);
    an item that cannot tell raises LookupError: `UNTOLD` too."""
    found: list[str] = []
    todo = [obj]
    while todo:
        if budget == 0:  # a string left unread may name a module: changed (fail closed)
            return (*found, UNTOLD)
        item, budget = todo.pop(), budget - 1
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            todo.extend([*item.keys(), *item.values()])
        elif isinstance(item, _DATA):
            todo.extend(item)
        elif held is not None:
            try:
                todo.extend(held(item) or ())
            except LookupError:
                return (*found, UNTOLD)
    return tuple(found)


def dotted_strings(code: types.CodeType, data: tuple[str, ...], finds: bool) -> tuple[str, ...]:
    """The strings of the code or of `data` that may name an attribute of a
    module (`"plugmod.run"`, `"plugmod:run"`, as `module.attr`); when the
    function looks modules up (`finds`), those of `data` naming a module
    too (`MODS = {"p": "plugmod"}`, marked by a trailing ":")."""
    consts = tuple(c for co in code_objects(code) for c in co.co_consts if isinstance(c, str))
    return _data_texts((*consts, *data), finds, len(consts))


def _data_texts(data: tuple[str, ...], finds: bool, skip: int = 0) -> tuple[str, ...]:
    """`dotted_strings` of strings, the first `skip` of the code's own."""
    found = [t.replace(":", ".", 1) for t in data if "." in t[1:] or ":" in t[1:]]
    found += [f"{t}:" for t in data[skip:] if finds]
    return tuple(dict.fromkeys(t for t in found if len(t) < 256 and _dotted(t.rstrip(":"))))


def attribute_modules(texts: tuple[str, ...]) -> tuple[tuple[types.ModuleType | None, str, object], ...]:
    """(module, attr, what it binds there) for each string naming an
    attribute of a module of the user's (`dotted_strings`), (module, "",
    None) for one naming the module (`"plugmod:"`). A module not loaded yet
    is imported only when its file binds `attr` at top level (`"config.yaml"`
    does not import `config.py`), never the script run as `__main__` (or
    as `__mp_main__` in a spawn worker, whose `__main__` is not yet the
    script while it runs), which imported under its name would run again.
    Nor is a module whose file does work at import (`train.py` training at
    top level): (None, its name, its file's digest) stands for it, whether
    it is loaded or not. A tuple: a memo's check of it is identity tests alone."""
    found: dict[tuple[int, str], tuple[types.ModuleType | None, str, object]] = {}
    scripts = {os.path.abspath(f) for m in _SCRIPT_MODULES if isinstance(f := getattr(sys.modules.get(m), "__file__", None), str)}
    for text in texts:
        parts = text.rstrip(":").split(".")
        if not _may_be_module(parts[0]):
            continue
        ends = [len(parts)] if text.endswith(":") else range(len(parts) - 1, 0, -1)
        for end in ends:
            name = ".".join(parts[:end])
            if parts[0] not in sys.modules and file_of(parts[:1]) in scripts:
                break
            if name not in sys.modules and end < len(parts) and parts[end] not in top_names(file_of(parts[:end])):
                continue
            if (digest := works_at_import(name)) is not None:  # loaded or not: the same count
                found[0, name] = (None, name, digest)
                break
            module = import_user_module(name)
            if isinstance(module, types.ModuleType):
                attr = parts[end] if end < len(parts) else ""
                if not attr or attr in vars(module):
                    found[id(module), attr] = (module, attr, vars(module).get(attr))
                break
    return tuple(found.values())


def named_modules(code: types.CodeType, package: str = "") -> tuple[tuple[types.ModuleType | None, str, object], ...]:
    """(module, "", None) for each of the user's modules that string
    constants in the code name, a relative name (`import_module(".fast",
    package="plugins")`) under any package another constant or the module's
    own `package` names; (None, name, digest) for one whose file does work
    at import, never imported for it (`attribute_modules`). A tuple: a
    memo's check of it is identity tests alone."""
    found: dict[tuple[int, str], tuple[types.ModuleType | None, str, object]] = {}
    consts = [c for co in code_objects(code) for c in co.co_consts if isinstance(c, str)]
    packages = [c for c in consts if _dotted(c)] + ([package] if package else [])
    for const in consts:
        relative = const.startswith(".") and _dotted(const.lstrip(".") or "_")
        for name in [_resolved(const, p) for p in packages] if relative else [const]:
            if not _dotted(name) or not _may_be_module(name.partition(".")[0]):
                continue
            if (digest := works_at_import(name)) is not None:
                found[0, name] = (None, name, digest)
            elif isinstance(module := import_user_module(name), types.ModuleType):
                found[id(module), ""] = (module, "", None)
    return tuple(found.values())


def _may_be_module(top: str) -> bool:
    """Whether a top-level module of that name is loaded or could be: most
    strings a step holds name none, and each memo check asks again (one
    `find_spec` here, where a module's file, its text and its import were
    each looked for)."""
    if top in sys.modules:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _dotted(name: str) -> bool:
    return all(p.isidentifier() for p in name.split("."))


def _resolved(name: str, package: str) -> str:
    try:
        return importlib.util.resolve_name(name, package)
    except (ImportError, ValueError):  # beyond the top-level package
        return ""


# What reads a docstring, which a function's fingerprint leaves out.
_DOC_READERS = frozenset({"__doc__", "getdoc"})


def doc_parts(chains: list[tuple[str, ...]], globs: Mapping[str, Any], names: set[str]) -> dict[str, str]:
    """The docstrings of the functions and classes a function names, when
    it reads docstrings (`helper.__doc__`, `inspect.getdoc(helper)`): a
    docstring is no part of a fingerprint (an edit of it changes nothing a
    call does), save for code that reads it, which was served the old text."""
    if names.isdisjoint(_DOC_READERS):
        return {}
    parts: dict[str, str] = {}
    for chain in chains:
        obj, walked = globs.get(chain[0], _MISSING) if chain[0] in names else _MISSING, 1
        while walked < len(chain) and isinstance(obj, (types.ModuleType, type)):
            obj, walked = witnessed(getattr, obj, chain[walked], _MISSING), walked + 1
        if callable(obj):
            doc = witnessed(getattr, obj, "__doc__", None)
            parts["doc:" + ".".join(chain[:walked])] = hash_tokens([repr(doc)])
    return parts
