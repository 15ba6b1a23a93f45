"""Code a step is given by name: a step that looks modules up by a name
(`importlib.import_module(mod)`, `__import__`, `pkgutil.resolve_name`,
Hydra's `instantiate(cfg)`, a loader of the user's doing so) runs the
module its argument names, `call_tool("tools", q)`. Its fingerprint
sees the names its code and the data it reads hold (`lookups`), not
those of its arguments, and the argument digest counts a string by its
text: the tool edited, the call replayed what the old tool computed.
Such a call's identity counts the modules of the user's that the strings
among its arguments name, by their code (`code.module_stamp`; a package
by the texts of all its module files, imported or not, as a name built
at run time under it may import any of them), as a function passed as an
argument counts by its code. A completed run that made such a call
replays its body when called again, as for a step its definition does
not reach (`outcome.completed_outcome`): its manifest's answer was
checked against the definition alone."""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable
from typing import Any

from .._fingerprint.entrypoints import entry_constants, entry_groups, finds_entries
from .._fingerprint.givennames import (
    argument_modules,
    finds_by_name,
    given_parameters,
)
from .._fingerprint.packagefiles import package_digest
from .._fingerprint.reach import target_of
from .bound import bound_arguments
from .code import module_stamp
from .context import RunState
from .identity import is_token, value_digest
from .written import plain_steps

# (step name, its fingerprint) -> the modules its call's arguments named, for a refusal to name (`changed`)
NAMED: dict[tuple[str, str], tuple[str, ...]] = {}
# id(code) -> (code, whether its function looks modules up by name): a property of the code.
_FINDS: dict[int, tuple[types.CodeType, bool]] = {}
# id(code) -> (code, the parameters whose values may reach a lookup: `given_parameters`).
_GIVEN: dict[int, tuple[types.CodeType, frozenset[str] | None]] = {}


def names_modules(fn: object) -> bool:
    """Whether `fn` (under wrappers), or a step it runs as a plain call
    (`written.plain_steps`: `outer(kind, x)` calling `call_tool(kind, x)`),
    looks modules up by names it is given (`finds_by_name`): decided once
    for each code. Such a step is never plain (`StepSpec.plain_in`): its
    digest alone is not its identity."""
    if type(fn) is types.FunctionType and "__wrapped__" not in fn.__dict__:
        target = fn  # most steps: no wrapper to look behind
    else:
        target = target_of(fn)
        if type(target) is not types.FunctionType:
            return False
    return _finds(target) or any(map(_finds, plain_steps(target)))


def _finds(target: Any) -> bool:
    """`finds_by_name` of a function, once for its code."""
    code = target.__code__
    seen = _FINDS.get(id(code))
    if seen is None or seen[0] is not code:
        if len(_FINDS) >= 4096:
            _FINDS.clear()
        seen = _FINDS[id(code)] = (code, finds_by_name(target))
    return seen[1]


def with_named(fn: object, digest: str, args: tuple[Any, ...], kwargs: dict[str, Any], name: str = "", fp: str = "") -> str:
    """A call's digest joined with the code of the user's modules its
    arguments' strings name, for a function that looks modules up by a
    name (`finds_by_name`); the digest itself for any other. Only the
    arguments of the parameters whose values may reach a lookup
    (`given_parameters`: `kind` of `import_module("handlers_" + kind)`, not
    a label naming a module by chance). `name`, `fp`: the step's, under
    which `NAMED` notes the modules."""
    if is_token(digest) or not names_modules(fn):
        return digest
    target = target_of(fn)
    if type(target) is types.FunctionType and not _finds(target):
        # A step it runs plainly does: any of its arguments may reach that lookup.
        steps = plain_steps(target)
        return given_digest(steps, digest, (bound_arguments(fn), *args), kwargs, name, fp)
    args, kwargs = _given_only(fn, args, kwargs)
    entries = finds_entries(fn)  # and the group its code names (`entry_points(group="app.plugins")`)
    held = (bound_arguments(fn), args, entry_constants(fn) if entries else ())
    return _joined(digest, held, kwargs, (name, fp), _groups([fn]) if entries else False)  # `self.module` too


def _given_only(fn: object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of a call of `fn` bound to the parameters `given_parameters`
    tells may reach a lookup; all of them where it does not tell."""
    target = target_of(fn)
    code = getattr(target, "__code__", None)
    if type(target) is not types.FunctionType or not isinstance(code, types.CodeType):
        return args, kwargs
    seen = _GIVEN.get(id(code))
    if seen is None or seen[0] is not code:
        if len(_GIVEN) >= 4096:
            _GIVEN.clear()
        seen = _GIVEN[id(code)] = (code, given_parameters(target))
    keep = seen[1]
    if keep is None:
        return args, kwargs
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments  # type: ignore[arg-type]
    except (TypeError, ValueError):  # not bound as the signature says: all of them
        return args, kwargs
    return (), {k: v for k, v in bound.items() if k in keep}


def given_digest(
    fns: Iterable[object], digest: str, args: tuple[Any, ...], kwargs: dict[str, Any], name: str, fp: str = ""
) -> str:
    """`with_named` for a call that runs any of `fns`: a child workflow's
    steps (`agent("tools", q)`, its step importing what it is given)."""
    if is_token(digest) or not any(map(names_modules, fns)):
        return digest
    entries = [fn for fn in fns if finds_entries(fn)]
    return _joined(digest, (args, [entry_constants(fn) for fn in entries]), kwargs, (name, fp), _groups(entries) if entries else False)


def _groups(fns: list[object]) -> frozenset[str] | bool:
    """The groups `fns` look entry points up in (`entry_groups`); True (any) where one does not tell."""
    found = [entry_groups(fn) for fn in fns]
    return True if any(g is None for g in found) else frozenset().union(*(g for g in found if g is not None))


def _joined(digest: str, args: tuple[object, ...], kwargs: dict[str, Any], key: tuple[str, str], entries: bool | frozenset[str]) -> str:
    named = argument_modules((args, kwargs), entries)
    parts = sorted(_stamp(module, name, found) for module, name, found in named)
    if parts and key[0]:
        if len(NAMED) > 1024:
            NAMED.clear()
        NAMED[key] = tuple(module for module, _ in parts if module)
    return value_digest((digest, parts)) if parts else digest


def _stamp(module: types.ModuleType | None, name: str, found: object) -> tuple[str, str]:
    if module is None:  # a module whose file does work at import: its text (or UNTOLD)
        return name, str(found)
    # The whole module, also where the string names one attribute of it: what runs
    # there may be any of its functions (`"tools:search"` calling a helper of `tools`).
    return module.__name__, f"{module_stamp(module)}/{package_digest(module)}"


class Given:
    """A function given modules by name, as `ctx.unreached` lists it (by
    `name`); it holds the function, so that its id is not reused."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: object, name: str) -> None:
        self.fn, self.name = fn, name


def named_in(
    ctx: RunState, fn: object, name: str, fp: str, digest: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> str:
    """`with_named` for a call in a run (a step's, a `loop_over` block's),
    which a re-call of the run, completed, checks as its body replays
    (`ctx.unreached`, as for a step its definition does not reach)."""
    joined = with_named(fn, digest, args, kwargs, name, fp)
    if joined != digest:
        note_given(ctx, fn, name, fp)
    return joined


def note_given(ctx: RunState, fn: object, name: str, fp: str) -> None:
    """That the run called `fn` with modules given by name (`named_in`)."""
    noted = ctx.unreached.get(id(fn))
    if noted is None or getattr(noted[0], "fn", None) is not fn:
        ctx.unreached[id(fn)] = (Given(fn, name), fp)
