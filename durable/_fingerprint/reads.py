"""What a function reads besides its own code, and how each thing counts.

Pure standard library. The rule, for a name the code reads (a global, an attribute of a module
or of a class of the user's own code, a name imported inside the body, a default, a decorator):

* immutable plain data (str, numbers, bytes, None, tuples and frozensets of them) and enum
  members count by **value**, save a string made from the module's `__file__` (where its file
  lies is no part of a fingerprint);
* the user's own functions, steps and workflows are **followed** (helpers);
* everything else (lists, dicts, sets, modules, classes, objects, names rebound with `global`)
  counts by the **source of the module-level statements that bind it** (`SEEN = []`, `import
  json as ser`, `class Cfg: ...`), never by a value the program changes as it runs; the
  functions a list or dict holds are followed (a function there reads its own locals, not the
  module's: `canon.statement_chains`). Else `_fpvalues.fallback_tokens` says how it counts."""

from __future__ import annotations

import ast
import builtins
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .analysis import Analysis
from .annotated import annotations_read, handed_chains, reads_annotations
from .apart import state_only
from .bindings import binding_statements, bound_later, made_here_alone
from .boundto import holds_by_type_only
from .canon import (
    called_chains,
    chains_of,
    default_expressions,
    foreign_decorators,
    from_imports,
    name_chains,
    node_hash,
    statement_chains,
    uses_itself,
)
from .codecnames import named_codecs
from .contents import bound_part, class_attribute_part, contents_part, held_part
from .elsewhere import attribute_changed_elsewhere, elsewhere_of
from .handedpart import handed_part
from .holds import class_code, foreign_members, held_callables, user_class, whole_module
from .imported import refuse_stale_alias, refuse_stale_import
from .imports import (
    absolute,
    body_imports,
    import_user_module,
    imported_value,
    local_imports,
    user_module,
    working_imports,
)
from .kept import attributes_kept, only_written
from .libcode import library_code
from .libstate import body_library_parts, library_parts
from .lookups import doc_parts, whole_modules
from .ownpath import changed_apart, made_from_own_path, path_tokens
from .reach import _MISSING, _followable, class_member, code_objects, module_label
from .said import now_parts
from .source import source_of
from .standins import home_of, placed_builtin, replaced_module
from .subclasses import subclasses_read
from .throughnames import read_through_names, standalone_chains
from .values import _enum_tokens, fallback_tokens, hash_tokens, plain_tokens
from .witness import remember, witnessed

_BUILTINS = frozenset(dir(builtins))
_OWN_KINDS = (type, types.BuiltinFunctionType)


@dataclass(frozen=True)
class _Scope:
    """Where a name was found: a module's namespace (`user`: the user's own module) or a class (`cls`)."""

    namespace: Mapping[str, Any]
    user: bool
    checked_file: str | None = None
    cls: type | None = None


def read_names(fn: Any, nodes: list[ast.AST], code: types.CodeType, rebound: frozenset[str], out: Analysis) -> None:
    """Every name chain the code reads (`X`, `mod.X`, `Cfg.LIMIT`) that resolves outside the
    function, counted by the rule above. Only names the code really looks up globally (its
    `co_names`) count, so that a local that shadows a global is not mistaken for it."""
    globs: Mapping[str, Any] = getattr(fn, "__globals__", {})
    names = {n for co in code_objects(code) for n in co.co_names}
    # Decorators and defaults are evaluated around the function, not in it.
    around = {c[0] for n in [*foreign_decorators(nodes), *default_expressions(nodes)] for c in name_chains(n)}
    out.kept, names = frozenset((id(globs), n) for n in only_written(nodes, frozenset(names - around))), names | around
    # Recursion by name: while a decorator runs, the name is unbound (first import) or
    # bound to the previous object (reload, a cell run again): this function, covered.
    module = _Scope(globs, True, code.co_filename)
    if getattr(fn, "__qualname__", None) == getattr(fn, "__name__", None):
        names.discard(fn.__name__)
        if uses_itself(tuple(nodes), fn.__name__):  # `helper.k`, by `helper.k = 2`
            out.parts["global:" + fn.__name__] = _bound(fn.__name__, fn, module, out)
    local = local_imports(tuple(nodes), globs)
    package = str(globs.get("__package__") or "")
    if body_imports(tuple(nodes), package):  # `import train` in it: never run to fingerprint it
        out.parts.update(witnessed(working_imports, tuple(nodes), package))
    out.parts.update(body_library_parts(tuple(nodes), globs))  # `from random import randint` in it
    out.reached.extend(library_code(m for _, m, _ in body_imports(tuple(nodes), str(globs.get("__package__") or ""))))
    out.reached.extend(named_codecs(tuple(nodes), globs))  # `"a".encode("seven")` of `codecs.register(search)`
    if local:  # none without an import statement in the source (witnessed)
        remember(local_imports, (tuple(nodes), globs), local)
    done: set[tuple[str, ...]] = set()
    kept, chains = attributes_kept(tuple(nodes)), chains_of(tuple(nodes))  # `Cls.runs += 1`: by the class's statements
    for chain in chains:
        if chain[0] in local:  # the import statement is part of the code already
            path, obj, scope = _resolve(_Scope(local, False), chain)
            if len(path) == 1:  # what `from c import X` binds counts as `c.X` does
                path, scope = _imported_from(path, tuple(nodes), globs, scope)
        elif chain[0] in names:
            path, obj, scope = _resolve(module, chain)
            head = chain[0]  # `cfg.MODE` after a module-level `cfg.set_mode("slow")`
            if scope is not module and scope.user and changed_apart(head, globs, code.co_filename):
                out.parts["global:" + head] = _bound(head, globs.get(head), module, out)
            if scope is not module:  # `ser.dumps` of `import json as ser` ... `import pickle as ser`
                out.parts.update(held_part(head, head, globs, code.co_filename, module=True))
        else:
            continue
        if path not in done and not read_through_names(chain, obj, chains, standalone_chains(tuple(nodes))):
            done.add(path)  # not `helpers` of `helpers.f`: f counts, not every function of it
            # Kept by the function, unless another module sets it too (from the environment).
            own = scope.cls is not None and path in kept and not witnessed(attribute_changed_elsewhere, scope.cls, path[-1])
            _count(path, obj, scope, own or _rebound(path, obj, scope, module, rebound), out)
    for key, whole, attr in whole_modules(code, chains_of(tuple(nodes)), globs, names):
        if whole is None:  # `"train.run"`, never imported: its file's text
            out.parts[key] = attr
        elif attr:  # `locate("plugmod.run")`
            _count((attr,), vars(whole).get(attr, _MISSING), _Scope(vars(whole), True), False, out, key)
        else:
            out.parts["module:" + key] = whole_module(whole, out.reached)  # `globals()[name]`, `sys.modules[__name__]`
    out.parts.update(doc_parts(chains_of(tuple(nodes)), globs, names))  # `helper.__doc__`
    for key, sub, home in subclasses_read(fn, tuple(nodes), chains_of(tuple(nodes)), globs, names):
        _count((sub.__name__,), sub, _Scope(home, True), False, out, key)  # as if named
    handed = [_resolve(module, c)[1] for c in handed_chains(tuple(nodes)) if c[0] in names]
    decorated = reads_annotations(list(foreign_decorators(nodes)))  # `@validate_call`
    for f, by in [(fn, False), *((h, True) for h in handed if isinstance(h, types.FunctionType))]:
        for key, cls, home in annotations_read(f, decorated and f is fn, by):
            _count((cls.__name__,), cls, _Scope(home, True), False, out, key)  # `Money(v)` of `v: Money`


def _rebound(path: tuple[str, ...], obj: object, scope: _Scope, module: _Scope, rebound: frozenset[str]) -> bool:
    """Whether the name counts by its statements, not its value now: made from where its file lies
    (`HERE = dirname(__file__)`), or rebound with `global` (in its module or `config.DEBUG`'s)."""
    if scope.user and made_from_own_path(path[-1], obj, scope.namespace, scope.checked_file):
        return True
    if scope is module:
        return path[0] in rebound
    filename = scope.namespace.get("__file__") if scope.user else None
    return isinstance(filename, str) and path[-1] in source_of(filename, scope.namespace).rebound


def _count(path: tuple[str, ...], obj: Any, scope: _Scope, rebound: bool, out: Analysis,
           via: str = "", runs: bool | None = False) -> None:  # fmt: skip
    """Count `path` by the rule above (`via`: the reading statement's module; `runs`: by a
    method; None: state the statement's steps only write, by its statements alone)."""
    key = via + ".".join(path)
    if obj is _MISSING:
        if len(path) == 1 and scope.user and path[0] not in _BUILTINS and not via:
            out.unresolved.add(path[0])  # defined further down: recompute later
        return
    # In the statements binding a global the function only writes (`main()` emptying LOG): `made`.
    into = out.made if out.inside else out.reached
    if isinstance(obj, type) and user_class(obj):
        witnessed(class_code, obj)  # its methods' running code, besides its text
        into.extend(m for m in witnessed(foreign_members, obj) if _followable(m))
    toks = None if rebound else plain_tokens(obj, mutable=False) or _enum_tokens(obj) or path_tokens(obj)
    if toks is not None:
        out.parts["const:" + key] = hash_tokens(toks)
    elif _followable(obj):
        into.append(obj)
        if scope.user and (  # `s1 = make_step([1, 2])`; `helper.k = 2`
            witnessed(holds_by_type_only, obj)
            or changed_apart(path[-1], scope.namespace, scope.checked_file)
        ):
            _global(key, path[-1], obj, scope, out, not via)  # `helper.k = 2` between two calls
        if scope.user or (scope.cls is not None and not out.inside):  # `h = h2`; `Cls.key = staticmethod(two)`
            out.parts.update(bound_part(key, path[-1], obj, scope.namespace, scope.checked_file, scope.cls))
    elif isinstance(obj, types.ModuleType) and witnessed(user_module, obj):
        out.parts["module:" + key] = whole_module(obj, out.reached)  # `getattr(helpers, name)`
    elif (replaced := witnessed(replaced_module, obj)) is not None:
        # `import settings` of a module that put an object in its place: its class, as if named.
        _count((replaced.__name__,), replaced, _Scope(home_of(replaced), True), False, out, key + ".")
    elif scope.user or scope.cls is not None:
        into.extend(witnessed(held_callables, obj))  # a list may change in place
        if scope.cls is not None:  # its class's statements count already, not what changes it
            out.parts.update({} if out.inside else class_attribute_part(key, scope.cls, obj))
        else:
            _global(key, path[-1], obj, scope, out, None if runs is None else runs or not via)
            out.parts.update(held_part(key, path[-1], scope.namespace, scope.checked_file))  # `f` of `from json import dumps as f`
            libraries = [obj.__name__] if isinstance(obj, types.ModuleType) else []
            out.parts.update(library_parts(scope.namespace, libraries))
            into.extend(library_code(libraries))  # `series.geo` of a `register_series_accessor`


def _global(key: str, name: str, obj: object, scope: _Scope, out: Analysis, direct: bool | None = True) -> None:
    """By its statements, and by its contents where they change it in place: not a global
    the function only writes, read by it or by what binds it (`for f in [step]: LOG.clear()`),
    nor what those statements read (`main()` emptying LOG, printing RESULTS): no input of it."""
    own, was = (id(scope.namespace), name), out.inside
    kept = own in out.kept and (key == name or bool(was))  # read through `SNAP = list(LOG)`: counts
    # Asked again in this analysis (names whose statements read each other),
    # with `_bound` worked out once: the parts it set, set again in order.
    again = (key, id(obj), own, scope.checked_file, direct, was, kept, len(sys.modules))
    bound, now = out.again.get(again) or (None, None)
    if bound is None:
        out.inside = inner = was | {own} if kept else was
        bound = _bound(name, obj, scope, out)
        out.inside = was
        counted = not kept and not was and direct is not None  # None: a counter the steps reading it keep (`_count`)
        now = contents_part(name, obj, scope.namespace, scope.checked_file, running=bool(direct)) if counted else None
        if (*own, bool(inner), scope.checked_file, again[-1]) in out.again:  # not `from c import *`
            out.again[again] = (bound, now)
    out.parts["global:" + key] = bound
    out.parts.update(now_parts(key, now, obj))  # with its attributes' digests, to name them


def _bound(name: str, obj: object, scope: _Scope, out: Analysis) -> str:
    """The hash of the statements that bind `name`, after counting what they read: `ALL = BASE +
    [3]` depends on `BASE`'s statement as much as on its own, `from c import X` on the statement
    binding X in `c`. Once per analysis: names whose statements read each other ask it again."""
    # A module imported meanwhile may set it (`elsewhere_of`): asked afresh.
    again = (id(scope.namespace), name, bool(out.inside), scope.checked_file, len(sys.modules))
    if (hashed := out.again.get(again)):
        return hashed  # type: ignore[no-any-return]
    found = binding_statements(name, scope.namespace, scope.checked_file)
    # `settings.RATES = [3]` in another module: settings' statements do not show it.
    elsewhere = elsewhere_of(scope.namespace, name, out.parts)
    if found is None:
        found = binding_statements("*", scope.namespace, scope.checked_file) or []
        for stmt in found:  # `from c import *`: X is c's
            _follow_import(stmt, name, scope, out)
        if not found:
            return hash_tokens([*witnessed(fallback_tokens, obj), *elsewhere])
        return hash_tokens([*(node_hash(s) for s in found), *elsewhere])
    _statement_reads(name, found, scope, out)
    out.again[again] = hashed = hash_tokens([*(node_hash(s) for s in found), *elsewhere])
    return hashed


def _statement_reads(name: str, found: list[ast.AST], scope: _Scope, out: Analysis) -> None:
    """Count, once per module and name, every name the binding statements of `name` read or
    import from the user's own modules: by the statements binding it in turn, helpers by code."""
    if (seen := (id(scope.namespace), name, bool(out.inside))) in out.followed:
        return
    out.followed.add(seen)
    module = _Scope(scope.namespace, True, scope.checked_file)
    # `__main__` and a spawn worker's `__mp_main__`: the script's name (`module_label`).
    via = f"{module_label(str(scope.namespace.get('__name__', '?')))}."
    # A function whose `def` is among them (`main()` of `def main(): CFG["k"] = 2`): by its `def`'s part.
    done: set[tuple[str, ...]] = {(s.name,) for s in found if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for stmt in found:
        for imported in from_imports(stmt):  # also one inside `try:` or `if`
            _follow_import(imported, name, scope, out)
        for chain in statement_chains(handed_part(stmt, name, scope.namespace)):
            # A module's own dunders (`__file__`: where it lies) are not code.
            skip = chain[0] == name or chain[0].startswith("__") or chain in done
            if skip or made_here_alone(stmt, chain[0], scope.namespace, scope.checked_file):
                continue
            path, obj, where = _resolve(module, chain)
            if obj is _MISSING and len(path) == 1 and bound_later(path[0], scope.namespace):
                out.parts[f"global:{via}{path[0]}"] = _bound(path[0], None, module, out)  # `first`
            if path not in done and obj is not _MISSING:
                refuse_stale_alias(stmt, name, path, obj, scope.namespace, scope.checked_file)
                done.update((chain, path))
                # By its statements, never its value (`START = time.time()`); a counter steps bump: kept (`CALLS.update(k=0)` too).
                kept = state_only(stmt, name, chain[0], found, (id(scope.namespace), chain[0]) in out.kept)
                _count(path, obj, where, True, out, via, None if kept else chain in called_chains(stmt))


def _follow_import(stmt: ast.AST, name: str, scope: _Scope, out: Analysis) -> None:
    """`from c import X` (or `*`) binding `name`: X counts by c's own statements that bind it when
    c is the user's module; a library's by the import and what sets its state (`libstate`)."""
    if not isinstance(stmt, ast.ImportFrom):
        return
    package = str(scope.namespace.get("__package__") or "")
    module = absolute(stmt.module or "", stmt.level, package)
    for alias in stmt.names:
        if alias.name != "*" and (alias.asname or alias.name) != name:
            continue
        attr = name if alias.name == "*" else alias.name
        home = witnessed(import_user_module, module) if module else _MISSING
        out.parts.update(library_parts(scope.namespace, [module]))  # a library's: `random.seed(1)`
        out.reached.extend(library_code([module]))  # `Fraction.scale = scale` in another module
        if isinstance(home, types.ModuleType):
            obj = witnessed(imported_value, module, attr)
            if obj is not _MISSING:
                refuse_stale_import(stmt, alias, scope.namespace, scope.checked_file, home, obj)
                if (id(scope.namespace), name) in out.kept:  # what it only writes, where it lives
                    out.kept |= {(id(vars(home)), attr)}
                _count((attr,), obj, _Scope(vars(home), True), True, out, f"{module}.")


def _resolve(scope: _Scope, chain: tuple[str, ...]) -> tuple[tuple[str, ...], Any, _Scope]:
    """Follow `chain` through modules and the user's own classes (`cfg.LIMIT`, `Cfg.LIMIT`), not
    other objects (`obj.attr` is state): the path followed, the object, the scope it is in."""
    obj = witnessed(scope.namespace.get, chain[0], _MISSING)
    # Not in the module: Python looks in `builtins` next (`len` and `ValueError` are Python's own).
    if obj is _MISSING and scope.user and not isinstance(vars(builtins).get(chain[0]), _OWN_KINDS):
        obj = witnessed(placed_builtin, chain[0])
    for i, attr in enumerate(chain[1:], start=1):
        if isinstance(obj, types.ModuleType):
            scope = _Scope(vars(obj), witnessed(user_module, obj))
            obj = witnessed(getattr, obj, attr, _MISSING)
        elif isinstance(obj, type) and witnessed(user_class, obj):
            scope = _Scope(vars(obj), False, cls=obj)
            obj = witnessed(class_member, obj, attr)
        else:
            return chain[:i], obj, scope
    return chain, obj, scope


def _imported_from(path: tuple[str, ...], nodes: tuple[ast.AST, ...], globs: Mapping[str, Any],
                   scope: _Scope) -> tuple[tuple[str, ...], _Scope]:  # fmt: skip
    """For a name a body's `from c import X` binds, c's scope and (c, X),
    when c is the user's module: X then counts by c's statements."""
    package = str(globs.get("__package__") or "")
    for name, module, attr in body_imports(nodes, package):
        if name == path[0] and attr:
            home = witnessed(import_user_module, module)
            if isinstance(home, types.ModuleType):
                return (module, attr), _Scope(vars(home), True)
    return path, scope
