"""What a workflow's body filled from the environment or a file, for a
function that reads it: the globals of the user's modules it filled that
way, by content, as the run's first call reading one found them (`bound.
held_by`, through `read_from_body`'s `OUTSIDE`)."""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._fingerprint.derived import OUTSIDE, made_in
from .._fingerprint.heads import ANY, EVERYWHERE
from .._fingerprint.imports import user_module
from .._fingerprint.stepcodes import reached_names
from .._fingerprint.unseen import functions_write
from .identity import is_token, value_digest

if TYPE_CHECKING:
    from .bound import Body


def filled_from_outside(f: types.FunctionType, body: Body) -> list[tuple[str, str]]:
    """The globals `f` names that the body filled from the environment or a
    file (`CONFIG.update(json.load(open(path)))`, or a function it calls
    does; `globals().update(...)`, `exec(text, globals())`: any it names of
    that module), by content: no argument tells them, and the fingerprint,
    taken before the body filled them, saw them empty (or, for a function
    picked so, `helper = fb if os.environ[...] else fa`, counts every one it
    may be). As the run's first call reading one found it: what steps log
    there since is their state."""
    # Its nested code's and its helpers' too: a comprehension's own (`sum(CONFIG[k] for k in ks)`),
    # `helper(x)` reading `FACTOR`; past `MOST` functions (`untold`) any may be read.
    (names, values, untold), made = reached_names(f), made_in(body.function)
    found = []
    for name, params in made.stored.items():
        for i, home in enumerate(_homes(made.homes.get(name, ()), f, values) if OUTSIDE in params else ()):
            # Of any global filled (`globals().update(...)`), not one a function of its module
            # writes (`CACHE[k] = v`, `LOG.append(x)`): state the run's steps keep, not configuration.
            known = home.keys() if untold else names & home.keys()
            each_of = sorted(known - (functions_write(home) or set())) if name == ANY else (name,)
            for each in each_of:
                # A module counts by the globals of it filled (not `os` of `os.environ[...]`).
                value = home.get(each, home)
                if value is home or isinstance(value, types.ModuleType) or not _users(home):
                    continue
                if not (untold or each in names or any(value is v for v in values)):
                    continue
                digest = body.outside.get(key := f"{each}@{i}@{name}")
                if digest is None:
                    digest = body.outside[key] = _by_content(value)
                if not is_token(digest):  # a client: by its type, as a closure's
                    found.append((f"{each} (filled from outside)", digest))
    return found


def _homes(
    homes: tuple[Mapping[str, object], ...], f: types.FunctionType, values: list[object]
) -> list[Mapping[str, object]]:
    """Where a global filled lives; for one a function only the run knows
    filled (`EVERYWHERE`: `import_module(name).setup()`), `f`'s own module
    and each module of the user's `f` names (`helpers.f`)."""
    found: list[Mapping[str, object]] = []
    for home in homes:
        if home is not EVERYWHERE:
            found.append(home)
            continue
        found.append(f.__globals__)
        modules = [v for v in values if isinstance(v, types.ModuleType) and user_module(v)]
        found += [vars(m) for m in dict.fromkeys(modules) if vars(m) is not f.__globals__]
    return found


def _by_content(value: object) -> str:
    """`value_digest` (a function's counts its code); for a function whose
    code has no source to read (run from a file's text by `exec`), what its
    code is made of, not a token that leaves it out."""
    digest = value_digest(value)
    if not isinstance(value, types.FunctionType) or not is_token(digest):
        return digest
    return value_digest((value.__module__, value.__qualname__, _shape(value.__code__)))


def _shape(code: types.CodeType) -> tuple[Any, ...]:
    consts = tuple(_shape(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.co_code, code.co_names, code.co_varnames, consts


def _users(home: Mapping[str, object]) -> bool:
    module = sys.modules.get(str(home.get("__name__")))
    return module is not None and vars(module) is home and (module.__name__ == "__main__" or user_module(module))
