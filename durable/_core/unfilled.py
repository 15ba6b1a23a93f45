"""Whether a step reads a global its workflow's body fills from outside
(`bound.Body.fills`: `n = int(sys.argv[1])` at import, read by the body),
decided once a step and run, so that such a run's steps that read none of
them are identified by their digest alone (`StepSpec.plain_in`) as the
steps of any other run are."""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping

from .._fingerprint.derived import Made, _filled_objects, _names, made_in
from .._fingerprint.heads import ANY
from .._fingerprint.imports import user_module
from .bound import Body, bare


def reads_no_fill(fn: object, bodies: tuple[Body, ...]) -> bool:
    """Whether `held_by` finds nothing in `fn`, a function holding nothing
    (`bare`), for the bodies that fill a global (`Body.fills`), as
    `read_from_body` decides it: its code and that of each helper of its
    module it names (holding nothing, through theirs) names no filled
    global and no global holding a filled object (a library's code is not
    walked: it reads none of the user's globals). Fails closed: a helper
    holding something, a class or callable object of the user's, a user's
    module, a way to any global (`globals()`, `getattr`...), too many
    helpers, or a body filling any global (`globals()[key] = ...`). Asked once a step and run
    (`StepSpec.plain_in`): the globals it names are taken as they are then."""
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__durable_made_at__"):
        return False
    for body in bodies:
        made = made_in(body.function)
        if body.fills and (ANY in made.stored or not _none_named(fn, made, _filled_objects(made), set())):
            return False
    return True


_ESCAPES = frozenset({"globals", "vars", "locals", "eval", "exec", "getattr", "__dict__", "__globals__", "modules", "__import__", "import_module"})  # fmt: skip


def _none_named(f: types.FunctionType, made: Made, objects: Mapping[int, object], seen: set[int]) -> bool:
    names = _names(f.__code__)
    if not names.isdisjoint(made.stored) or not names.isdisjoint(_ESCAPES):
        return False
    for name in names:
        value = f.__globals__.get(name)
        if id(value) in objects:
            return False
        if isinstance(value, types.FunctionType):
            if id(value) in seen or not _users(value):  # a library's reads none of the user's
                continue
            if len(seen) >= _MOST:  # too many to be sure of
                return False
            seen.add(id(value))
            if not bare(value) or not _none_named(value, made, objects, seen):
                return False
        elif isinstance(value, types.ModuleType):
            if user_module(value):  # its functions are not looked at: `settings.load()`
                return False
        elif isinstance(value, type):
            if _users(value):  # its methods are not looked at
                return False
        elif callable(value) and not isinstance(value, types.BuiltinFunctionType) and _users(type(value)):
            return False  # a user's callable object: its `__call__` is not looked at
    return True


_MOST = 256  # helpers looked at, at most


def _users(code: types.FunctionType | type) -> bool:
    """Whether a function or class is the user's (fails closed: one of no
    module, or of a module not imported, is)."""
    module = sys.modules.get(code.__module__ or "")
    return module is None or user_module(module)
