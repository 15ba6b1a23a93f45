"""A module's global set or changed from another module of the user's
code: `settings.RATES = [3]` or `settings.RATES.append(3)` in `plugin.py`,
or in a function of it that its import calls (`configure()`),
`setattr(settings, "RATES", ...)`, `settings.CFG["k"] = 3`, and, through
another name bound to the same object, `Cfg.RATES = [3]` after `from
settings import Cfg`. The statements of `settings` do not show it, so
what a step reads as `settings.RATES` would count by statements that no
longer made it: those other statements count too (each whole
module-level statement, a `def` for a write in its body), fail closed,
whether or not it ran.

The writes of every loaded user module are indexed once per set of
loaded modules (`_Index`: by the module and name they reach, by the
object they change, by name alone where the module is not known), so
that what a step reads is looked up, not scanned for, on each call.

Pure standard library."""

from __future__ import annotations

import ast
import operator
import sys
import types
from collections.abc import Mapping
from typing import Any

from .bindings import module_statements
from .canon import node_hash
from .imports import user_class, user_module
from .source import current_text, rewritten_by_pytest
from .witness import file_state, remember, witnessed
from .writes import ANY, CALLED, MODULE_ROOT, Path, writes_of

# Values shared by identity without being one object a program changes.
_SHARED = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset)
_MISSING = object()
# A write: the module whose text makes it, and its module-level statement.
Entry = tuple[types.ModuleType, ast.AST]


class _Index:
    """The writes of the user's modules loaded in `state` (`loaded_state`)."""

    def __init__(self, state: object) -> None:
        self.state, self.token = state, _token()
        self.names: dict[tuple[int, str], list[Entry]] = {}  # (id of a namespace, name)
        self.objects: dict[int, list[Entry]] = {}  # id of an object changed
        self.anywhere: dict[str, list[Entry]] = {}  # a name of a module the text does not tell
        self.held: list[object] = []  # what `objects` and `names` are keyed by: ids stay theirs
        self.roots: dict[tuple[int, str], tuple[Mapping[str, Any], str, object]] = {}
        # (id of a namespace, name) -> (namespace, what the name held, hashes, writers)
        self.found: dict[tuple[int, str], tuple[Any, Any, tuple[str, ...], tuple[Any, ...]]] = {}

    def roots_hold(self) -> bool:
        """Whether each module-level name a write starts from holds what it
        did (`target = other` at run time keeps the number of names)."""
        roots = self.roots.values()
        return all(namespace.get(root, _MISSING) is value for namespace, root, value in roots)


def elsewhere_of(namespace: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The hashes of the module-level statements of the user's other loaded
    modules that set or change, through a name chain, `name` of the module
    whose namespace is `namespace` or the object it holds. ConfigurationError
    when such a module's file was edited after import (its text is not what
    ran), unless pytest loaded it (`@given` makes code its text does not
    compile to): its text counts. Memoised with a witness, `_again`."""
    index = _index(full=True)
    hit = index.found.get((id(namespace), name))
    if (hit is None or hit[1] is not namespace.get(name, _MISSING)) and not index.roots_hold():
        index = _INDEX[0] = _build(index.state)  # a new name read, or one bound anew: checked
    found, writers = _lookup(index, namespace, name)
    for writer in writers:
        if rewritten_by_pytest(vars(writer)):
            witnessed(file_state, writer.__file__)  # a run's start reports an edit
        else:
            module_statements(vars(writer))  # refused when edited after import
    remember(_again, (namespace, name), found)
    return found


def called_elsewhere(namespace: Mapping[str, Any], name: str) -> bool:
    """Whether a module-level statement of another loaded module of the
    user's calls the function `name` of the module whose namespace is
    `namespace` as it runs (`settings.set_lr(lr)` in a script's loop): what
    that function changes is changed between two calls of a step."""
    home, key = _home(namespace), CALLED + name
    index = _index(full=False)
    entries = index.names.get((id(namespace), key), []) + index.anywhere.get(key, [])
    return home is not None and any(writer is not home for writer, _ in entries)


def _home(namespace: Mapping[str, Any]) -> types.ModuleType | None:
    home = sys.modules.get(str(namespace.get("__name__")))
    return home if home is not None and vars(home) is namespace else None


def _again(namespace: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """`elsewhere_of` checked on a step call: a lookup while the modules
    loaded are the same (their number and the last one), else the index is
    checked (`loaded_state`) and made again if they changed."""
    index = _INDEX[0]
    return _lookup(index if index.token == _token() else _index(full=False), namespace, name)[0]


def _token() -> tuple[int, object, object]:
    modules = sys.modules  # an import adds at the end
    last = next(reversed(modules.items()), (None, None))
    return len(modules), *last


def _index(full: bool) -> _Index:
    """The index of the modules loaded now: checked by `loaded_state` when
    `full` (a fingerprint being computed) or when `_token` changed."""
    index = _INDEX[0]
    if not full and index.token == _token():
        return index
    state = loaded_state()
    if state is not index.state:
        index = _build(state)
    index.token = _token()
    _INDEX[0] = index
    return index


def _lookup(
    index: _Index, namespace: Mapping[str, Any], name: str
) -> tuple[tuple[str, ...], tuple[types.ModuleType, ...]]:
    key, held = (id(namespace), name), namespace.get(name, _MISSING)
    hit = index.found.get(key)
    if hit is not None and hit[0] is namespace and hit[1] is held:
        return hit[2], hit[3]
    home = _home(namespace)
    entries: list[Entry] = []
    if home is not None:
        for table, part in ((index.names, key), (index.names, (key[0], ANY))):
            entries += table.get(part, ())
        entries += index.anywhere.get(name, []) + index.anywhere.get(ANY, [])
        if _changeable(held):
            entries += index.objects.get(id(held), ())
    entries = [e for e in entries if e[0] is not home]
    found = tuple(sorted({node_hash(unit) for _, unit in entries}))
    writers = tuple(dict.fromkeys(writer for writer, _ in entries))
    if len(index.found) >= 4096:  # namespaces made again and again (a notebook)
        index.found.clear()
    index.found[key] = (namespace, held, found, writers)
    return found, writers


def _build(state: object) -> _Index:
    index = _Index(state)
    for writer in _user_modules():
        namespace = vars(writer)
        for path, unit in writes_of(current_text(writer.__file__, namespace)):  # type: ignore[arg-type]
            _place(index, (writer, unit), namespace, path)
    return index


def _place(index: _Index, entry: Entry, namespace: Mapping[str, Any], path: Path) -> None:
    """Index the write through `path` by what it reaches now. A root that
    holds no module or object now (`target = None`, bound at run time to
    a module: not seen until the loaded modules change) may reach any, as
    a module whose name the text does not give (`sys.modules[k]`)."""
    root = path[0]
    value: object = None
    if root.startswith(MODULE_ROOT):
        key = root[len(MODULE_ROOT) :]
        value = entry[0] if key == "__name__" else sys.modules.get(key) if key else value
    else:
        value = namespace.get(root, _MISSING)
        if value is _MISSING:  # a local name: not followed
            return
        index.roots[id(namespace), root] = (namespace, root, value)  # what it held
    if value is None or isinstance(value, _SHARED):
        if len(path) > 1:
            index.anywhere.setdefault(path[1], []).append(entry)
        return
    for i in range(1, len(path) + 1):
        if _changeable(value):  # changed in place, an item or attribute set
            index.objects.setdefault(id(value), []).append(entry)
            index.held.append(value)
        if i == len(path) or not isinstance(value, (types.ModuleType, type)):
            return
        if isinstance(value, types.ModuleType):
            index.names.setdefault((id(vars(value)), path[i]), []).append(entry)
            index.held.append(value)
        if path[i] == ANY:
            return
        value = _member(value, path[i])


def _member(owner: types.ModuleType | type, name: str) -> object:
    """`owner.name` as stored: no module `__getattr__`, no descriptor run."""
    for space in (owner,) if isinstance(owner, types.ModuleType) else owner.__mro__:
        found = vars(space).get(name, _MISSING)
        if found is not _MISSING:
            return found
    return None


def _changeable(value: object) -> bool:
    """An object a write may change for the step that reads it: not a value
    shared by identity, a module, nor a library's class or builtin (`Fraction
    .from_float(x)` in a test changes nothing a step reading `Fraction` sees)."""
    if isinstance(value, (*_SHARED, types.ModuleType, types.BuiltinFunctionType)):
        return False
    return not isinstance(value, type) or user_class(value)


_INDEX: list[_Index] = [_Index(None)]
_LOADED: tuple[tuple[object, ...], tuple[types.ModuleType, ...]] = ((), ())
_KNOWN: dict[int, tuple[object, bool]] = {}  # id -> (a module, whether it is the user's)
# The user's modules (their keys, the modules, their specs and numbers of
# names) as `loaded_state` last told, and the number of modules loaded
# and the last one then.
Users = tuple[tuple[str, ...], tuple[types.ModuleType, ...], tuple[object, ...], tuple[int, ...]]
_STATE: list[Any] = [(-1, None, None), ((), (), (), ())]
_SPEC = operator.attrgetter("__spec__")


def loaded_state() -> Users:
    """The user's modules loaded, each with its key, its spec
    (`importlib.reload` makes a new one) and its number of names: the same
    tuple while none of that changed (a library imported meanwhile), so
    that it is checked by identity. In C while no module was imported."""
    (n, key, module), users = _STATE
    modules = sys.modules
    last = next(reversed(modules.items()), (None, None))
    if n == len(modules) and key == last[0] and module is last[1] and _hold(users):
        return users  # type: ignore[no-any-return]
    mine = set(map(id, _user_modules()))
    pairs = [(k, m) for k, m in list(modules.items()) if id(m) in mine]
    mods = tuple(m for _, m in pairs)
    now = (tuple(k for k, _ in pairs), mods, tuple(map(_SPEC, mods)), _sizes(mods))
    if not (len(mods) == len(users[1]) and now[0] == users[0] and _hold(users)):
        users = now
    _STATE[:] = [(len(modules), *last), users]
    return users  # type: ignore[no-any-return]


def _hold(users: Users) -> bool:
    keys, mods, specs, sizes = users
    return (
        all(map(operator.is_, map(sys.modules.get, keys), mods))
        and all(map(operator.is_, map(_SPEC, mods), specs))
        and sizes == _sizes(mods)
    )


def _sizes(mods: tuple[types.ModuleType, ...]) -> tuple[int, ...]:
    return (*map(len, map(vars, mods)),)


def _user_modules() -> tuple[types.ModuleType, ...]:
    """The user's modules loaded now, with a file; computed again when
    `sys.modules` changed, each module asked about once."""
    global _LOADED
    loaded = tuple(sys.modules.values())
    if loaded != _LOADED[0]:
        if len(_KNOWN) > 16384:  # modules made and dropped again and again (tests)
            _KNOWN.clear()
        _LOADED = (loaded, tuple(m for m in loaded if _users(m)))
    return _LOADED[1]


def _users(module: object) -> bool:
    known = _KNOWN.get(id(module))
    if known is None or known[0] is not module:
        mine = isinstance(module, types.ModuleType) and isinstance(
            getattr(module, "__file__", None), str
        )
        known = _KNOWN[id(module)] = (module, mine and user_module(module))  # type: ignore[arg-type]
    return known[1]
