"""Plugins a step looks up by entry point (`importlib.metadata`): which
groups its code names (`entry_points(group="app.plugins")`, run whole, or
spelled where it selects one by name), and what the entry points a string
names load, with the distribution declaring each and its version, so that
an installed plugin upgraded is another call (`givennames.argument_modules`).
Pure standard library."""

from __future__ import annotations

import ast
import os
import sys
import types
from collections.abc import Mapping

from .nodes import walk
from .reach import code_objects, target_of
from .source import find_definitions, source_of

# importlib.metadata's: a plugin looked up by its entry point's name (`entry_points(group=g, name=n)`,
# `entry_points(group=g)[n]`), the module it loads declared in a distribution's metadata.
ENTRY = "entry_points"
# Its lookups, setuptools' `pkg_resources.iter_entry_points(group, name)` too: (name, its group's
# position, its name's) among the arguments.
_LOOKUPS = {ENTRY: (-1, -1), "select": (-1, -1), "iter_entry_points": (0, 1)}
ENTRIES = frozenset({ENTRY, "iter_entry_points"})
# sys.path, each folder's time of change -> entry point name -> (what it loads,
# its distribution's name and version) for each entry point of that name.
_TABLES: dict[tuple[tuple[str, int], ...], dict[str, tuple[tuple[str, str, str, str], ...]]] = {}


def finds_entries(fn: object) -> bool:
    """Whether `fn` (under wrappers) looks plugins up by entry point."""
    code = getattr(target_of(fn), "__code__", None)
    return isinstance(code, types.CodeType) and any(not ENTRIES.isdisjoint(co.co_names) for co in code_objects(code))


def entry_constants(fn: object) -> tuple[str, ...]:
    """The groups `fn`'s code (under wrappers) runs every plugin of, by a
    constant: `entry_points(group="app.plugins")`, `.select(group=...)`,
    with no `name=` and not indexed by one (`[name]`: the arguments tell
    which). No argument names those plugins: edited, the call replayed
    their old output. Its source unread: all its string constants."""
    target = target_of(fn)
    code = getattr(target, "__code__", None)
    if not isinstance(code, types.CodeType):
        return ()
    seen = _GROUPS.get(id(code))
    if seen is not None and seen[0] is code:  # a property of the code: each call of the step asks
        return seen[1]
    if len(_GROUPS) >= 1024:
        _GROUPS.clear()
    found = _GROUPS[id(code)] = (code, _groups(code, getattr(target, "__globals__", None)))
    return found[1]


# id(code) -> (code, the groups `entry_constants` found in it).
_GROUPS: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}


def _groups(code: types.CodeType, globs: Mapping[str, object] | None) -> tuple[str, ...]:
    nodes = find_definitions(code, source_of(code.co_filename, globs))
    if not nodes:
        return tuple(c for co in code_objects(code) for c in co.co_consts if isinstance(c, str) and len(c) < 256)
    parents = {id(c): p for top in nodes for p in walk(top) for c in ast.iter_child_nodes(p)}
    found = []
    for node in (n for top in nodes for n in walk(top)):
        group, name = _told(node)
        if isinstance(group, ast.Constant) and isinstance(group.value, str) and name is None and not isinstance(parents.get(id(node)), ast.Subscript):
            found.append(group.value)
    return tuple(found)


def _told(node: ast.AST) -> tuple[ast.expr | None, ast.expr | None]:
    """The group and the name a lookup of entry points (`_LOOKUPS`) is
    given, by keyword or where `iter_entry_points` takes them; (None,
    None) for any other node."""
    func = getattr(node, "func", None)
    at = _LOOKUPS.get(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    if not isinstance(node, ast.Call) or at is None:
        return None, None
    given = {k.arg: k.value for k in node.keywords}
    for i, key in enumerate(("group", "name")):
        if 0 <= at[i] < len(node.args):
            given[key] = node.args[at[i]]
    return given.get("group"), given.get("name")


def entry_groups(fn: object) -> frozenset[str] | None:
    """The groups `fn`'s code (under wrappers) looks entry points up in,
    each spelled (`entry_points(group="app.tools", name=name)`,
    `entry_points().select(group=...)`): an entry point of that name in
    another group (mkdocs's `search` plugin) is none it loads. None when
    one is not told (`entry_points()[g]`, a group in a variable, its
    source unread): any group's counts."""
    code = getattr(target_of(fn), "__code__", None)
    if not isinstance(code, types.CodeType):
        return None
    seen = _IN_GROUPS.get(id(code))
    if seen is None or seen[0] is not code:
        if len(_IN_GROUPS) >= 1024:
            _IN_GROUPS.clear()
        seen = _IN_GROUPS[id(code)] = (code, _spelled_groups(code, getattr(target_of(fn), "__globals__", None)))
    return seen[1]


_IN_GROUPS: dict[int, tuple[types.CodeType, frozenset[str] | None]] = {}


def _spelled_groups(code: types.CodeType, globs: Mapping[str, object] | None) -> frozenset[str] | None:
    nodes = find_definitions(code, source_of(code.co_filename, globs))
    parents = {id(c): p for top in nodes for p in walk(top) for c in ast.iter_child_nodes(p)}
    found: set[str] = set()
    for node in (n for top in nodes for n in walk(top)):
        if not isinstance(node, ast.Call) or _LOOKUPS.get(_called(node.func)) is None:
            continue
        group, _ = _told(node)
        above = parents.get(id(node))
        if isinstance(group, ast.Constant) and isinstance(group.value, str) and (not node.args or _called(node.func) != ENTRY):
            found.add(group.value)
        elif node.args or node.keywords or not (isinstance(above, ast.Attribute) and above.attr == "select"):
            return None  # `entry_points()[g]`, `entry_points(group=g)`: any group
    return frozenset(found) if found else None


def entry_values(
    data: tuple[str, ...], groups: frozenset[str] | None = None
) -> tuple[tuple[str, ...], tuple[tuple[None, str, object], ...]]:
    """What the entry points named by these strings load (`"tools:search"`),
    of `groups` only when given (`entry_groups`), every one of a group a
    string names too,
    and (None, the distribution declaring each, its version): an installed
    plugin upgraded (`pip install -U`: a new `*.dist-info`, the same entry
    point, other code) is another call, as a library's code counts by
    nothing else. Read from the metadata of the distributions on `sys.path`
    once per path and time of change of its folders (an install in this
    process, a notebook's `%pip install`, adds a folder to one)."""
    key = tuple((p, _changed(p)) for p in sys.path)
    if key not in _TABLES:
        from importlib.metadata import distributions

        table: dict[str, list[tuple[str, str, str, str]]] = {}
        for dist in distributions():
            for ep in dist.entry_points:
                held = (ep.group or "", ep.value, str(dist.metadata["Name"]), str(dist.version))
                table.setdefault(ep.name, []).append(held)
                if ep.group and ep.group != ep.name:  # `entry_points(group=g)`, every plugin of it run
                    table.setdefault(ep.group, []).append(held)
        _TABLES.clear()
        _TABLES[key] = {n: tuple(v) for n, v in table.items()}
    found = [e for text in dict.fromkeys(data) for e in _TABLES[key].get(text, ()) if groups is None or e[0] in groups]
    return tuple(v for _, v, _, _ in found), tuple((None, f"distribution {d}", f"{version} {v}") for _, v, d, version in found)


def _called(func: ast.AST) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _changed(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return -1
