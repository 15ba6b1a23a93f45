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
import sys
import types
from collections.abc import Collection, Mapping
from typing import Any

from .analysis import WHERE
from .bindings import module_statements
from .canon import node_hash
from .loaded import EachModule, Users, loaded_state
from .outside import _durable
from .placed import MISSING, Entry, Placed, Read, changeable, placed
from .reach import module_label
from .source import rewritten_by_pytest
from .witness import file_state, remember, witnessed
from .writes import ANY, CALLED

# What `placed` gives for a module: what placing its writes read, where they landed.
Placing = tuple[tuple[Read, ...], tuple[Placed, ...]]


class _Index:
    """The writes of the user's modules loaded in `state` (`loaded_state`)."""

    def __init__(self, state: Users | None) -> None:
        self.state, self.token = state, _token()
        self.names: dict[Any, list[Entry]] = {}  # (id of a namespace, name)
        self.objects: dict[Any, list[Entry]] = {}  # id of an object changed
        self.anywhere: dict[Any, list[Entry]] = {}  # a name of a module the text does not tell
        # id of a module -> (it, where its writes landed and what placing them read,
        # which holds what `objects` and `names` are keyed by: ids stay theirs)
        self.mine: dict[int, tuple[types.ModuleType, Placing]] = {}
        # (id of a namespace, name) -> (namespace, what the name held, hashes, writers, entries)
        self.found: dict[tuple[int, str], tuple[Any, Any, tuple[str, ...], tuple[Any, ...], tuple[Entry, ...]]] = {}

    def roots_hold(self) -> bool:
        """Whether each name a write was followed through holds what it did
        (`target = other` at run time keeps the number of names)."""
        return all(_reads_hold(placing) for _, placing in self.mine.values())


def elsewhere_of(namespace: Mapping[str, Any], name: str, parts: dict[str, str] | None = None) -> tuple[str, ...]:
    """The hashes of the module-level statements of the user's other loaded
    modules that set or change, through a name chain, `name` of the module
    whose namespace is `namespace` or the object it holds. ConfigurationError
    when such a module's file was edited after import (its text is not what
    ran), unless pytest loaded it (`@given` makes code its text does not
    compile to): its text counts. Memoised with a witness, `_again`.
    The writers' names go into `parts` (never hashed), for a refusal to name."""
    index = _index(full=True)
    hit = index.found.get((id(namespace), name))
    if (hit is None or hit[1] is not namespace.get(name, MISSING)) and not index.roots_hold():
        index = _INDEX[0] = _build(loaded_state(), index)  # a new name read, or one bound anew: checked
    found, writers, _ = _lookup(index, namespace, name)
    for writer in writers:
        if rewritten_by_pytest(vars(writer)):
            witnessed(file_state, writer.__file__)  # a run's start reports an edit
        else:
            module_statements(vars(writer))  # refused when edited after import
    remember(_again, (namespace, name), found)
    if found and parts is not None:
        who = sorted({module_label(w.__name__) for w in writers})
        parts[f"{WHERE}{module_label(str(namespace.get('__name__')))}.{name}"] = ", ".join(who)
    return found


def attributes_set_elsewhere(namespace: Mapping[str, Any], name: str, attrs: Collection[str]) -> tuple[str, ...]:
    """Which of `attrs` (a class's) the statements `elsewhere_of` finds for
    `name` name as an attribute (`models.Base.rate = 2` in a script): they
    set it, or may, between two calls."""
    entries = _lookup(_index(full=False), namespace, name)[2]
    named = {n.attr for _, unit in entries for n in ast.walk(unit) if isinstance(n, ast.Attribute)}
    return tuple(sorted(named.intersection(attrs)))


def attribute_changed_elsewhere(cls: type, attr: str) -> bool:
    """Whether another module of the user's sets `attr` of the top-level class
    `cls` where `changed_elsewhere` looks (`flow.Acc.n = int(os.environ["K"])`,
    `setattr(Acc, "n", ...)`, a setattr of a computed name): no class statement
    made its value, so a function rebinding it counts it by value (`reads`)."""
    home = sys.modules.get(cls.__module__)
    if home is None or "." in cls.__qualname__:
        return False
    for writer, unit in _lookup(_index(full=False), vars(home), cls.__name__)[2]:
        nodes = list(ast.walk(unit))
        named = {n.attr if isinstance(n, ast.Attribute) else n.value for n in nodes if isinstance(n, (ast.Attribute, ast.Constant))}
        setters = [n for n in nodes if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setattr"]
        computed = any(len(c.args) < 2 or not isinstance(c.args[1], ast.Constant) for c in setters)
        if (attr in named or computed) and (not isinstance(unit, _DEFS) or _run_by_its_module(writer, unit)):
            return True
    return False


def changed_elsewhere(namespace: Mapping[str, Any], name: str) -> bool:
    """Whether a module-level statement of another module of the user's
    (not a function's body: what a run does) sets or changes `name` of the
    module whose namespace is `namespace` (`helpers.CFG["k"] = 2` in a
    script): in its file before and after it ran, its text tells nothing
    of what a call between the two saw."""
    entries = _lookup(_index(full=False), namespace, name)[2]
    return any(not isinstance(unit, _DEFS) or _run_by_its_module(w, unit) for w, unit in entries)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _run_by_its_module(writer: types.ModuleType, unit: ast.AST) -> bool:
    """Whether `unit` is a function (not a step or workflow: what a run does
    is the program's state) that its module's own module-level statements
    call (`main()` in a script doing `helpers.CFG["k"] = 2`)."""
    if not isinstance(unit, (ast.FunctionDef, ast.AsyncFunctionDef)) or _durable(unit):
        return False
    return unit.name in _called_at_module_level(module_statements(vars(writer)) or [])


# id(a module's first statement) -> (it, the names its module-level statements call)
_CALLED: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def _called_at_module_level(statements: list[ast.AST]) -> frozenset[str]:
    if not statements:
        return frozenset()
    hit = _CALLED.get(id(statements[0]))
    if hit is not None and hit[0] is statements[0]:
        return hit[1]
    names = frozenset(
        n.func.id for s in statements if not isinstance(s, _DEFS)
        for n in ast.walk(s) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    )  # fmt: skip
    if len(_CALLED) >= 1024:
        _CALLED.clear()
    _CALLED[id(statements[0])] = (statements[0], names)
    return names


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
    index = _build(state, index) if state is not index.state else index
    index.token = _token()
    _INDEX[0] = index
    return index


def _lookup(
    index: _Index, namespace: Mapping[str, Any], name: str
) -> tuple[tuple[str, ...], tuple[types.ModuleType, ...], tuple[Entry, ...]]:
    key, held = (id(namespace), name), namespace.get(name, MISSING)
    hit = index.found.get(key)
    if hit is not None and hit[0] is namespace and hit[1] is held:
        return hit[2], hit[3], hit[4]
    home = _home(namespace)
    entries: list[Entry] = []
    if home is not None:
        entries += index.names.get(key, []) + index.names.get((key[0], ANY), [])
        entries += index.anywhere.get(name, []) + index.anywhere.get(ANY, [])
        if changeable(held):
            entries += index.objects.get(id(held), ())
    entries = [e for e in entries if e[0] is not home]
    found = tuple(sorted({node_hash(unit) for _, unit in entries}))
    writers = tuple(dict.fromkeys(writer for writer, _ in entries))
    if len(index.found) >= 4096:  # namespaces made again and again (a notebook)
        index.found.clear()
    kept = tuple(entries)
    index.found[key] = (namespace, held, found, writers, kept)
    return found, writers, kept


def _build(state: Users, before: _Index) -> _Index:
    """The index of `state` made from `before` (that of the set of modules
    before): the writes of a module dropped, or placed again (`_PLACED`:
    reloaded, its file or number of names changed, a name they went
    through bound anew), taken out; those of a module imported or placed
    again put in; the others' kept where they are. A new index, `before`
    untouched: another thread may be reading it."""
    placings = _PLACED.answers(state, None)
    now = {id(m): placing for m, placing in zip(state[1], placings, strict=True)}
    index = _Index(state)
    index.names, index.objects, index.anywhere = before.names.copy(), before.objects.copy(), before.anywhere.copy()
    tables = {"names": index.names, "objects": index.objects, "anywhere": index.anywhere}
    mine: set[tuple[str, object]] = set()  # the lists made for `index`: `before`'s stay as they were

    def own(table: str, at: object) -> list[Entry]:
        if (table, at) not in mine:
            mine.add((table, at))
            tables[table][at] = list(tables[table].get(at, ()))
        return tables[table][at]

    for key, (writer, placing) in before.mine.items():
        if now.get(key) is placing:
            index.mine[key] = (writer, placing)
            continue
        for table, at, _, _ in placing[1]:
            own(table, at)[:] = [e for e in own(table, at) if e[0] is not writer]
    for writer, placing in zip(state[1], placings, strict=True):
        if id(writer) not in index.mine:
            index.mine[id(writer)] = (writer, placing)
            for table, at, entry, _ in placing[1]:
                own(table, at).append(entry)
    for table, at in mine:
        if not tables[table][at]:
            del tables[table][at]
    return index


def _placing(writer: types.ModuleType, _: object) -> Placing:
    return placed(writer)


def _reads_hold(placing: Placing) -> bool:
    return all(space.get(key, MISSING) is value for space, key, value in placing[0])


# Where each loaded module's writes land, kept while it is unchanged.
_PLACED: EachModule[Placing] = EachModule(_placing, _reads_hold)


_INDEX: list[_Index] = [_Index(None)]
