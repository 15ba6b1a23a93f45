"""Which attribute of a global counted by what it holds differs, for a
refusal to name it (`now SETTINGS changed (SETTINGS.started differs ...)`):
a short digest of each attribute, kept beside the part that counts the
whole (`analysis.SAID`), never hashed into a fingerprint. For a
constant that changed, the statement that made it by a call (`START =
time.time()`), which may make a new value in each process.

Pure standard library."""

from __future__ import annotations

import ast
import json
import types
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigurationError
from .analysis import NOW, SAID
from .attributes import attribute_digests
from .bindings import binding_statements
from .reach import target_of

#: What to do about a value that differs in every process, said once a refusal.
_ADVICE = (  # a value set from the command line differs too, deliberately: no advice of one kind
    "if you set it otherwise (a command-line option, a configuration), that is the change; if it is "
    "made anew in each process (datetime.now(), time.time(), uuid4() or a random token at import), "
    "it differs on every resume: pass what the step needs as an argument (of the workflow, "
    "handed on to the step), or keep such a value out of the objects steps read"
)


def now_parts(key: str, now: str | None, obj: object) -> dict[str, str]:
    """The part counting `obj` by what it holds now (`now:KEY`), with its
    attributes' digests beside it when it has any."""
    if not now:
        return {}
    try:
        each = attribute_digests(obj)
    except Exception:  # a `__dict__` property that raises, a RecursionError: nothing named
        each = {}
    return {NOW + key: now, **({SAID + NOW + key: json.dumps(each, sort_keys=True)} if each else {})}


def made_by_calls(fn: Any, names: Iterable[str]) -> dict[str, str]:
    """The module-level statements that made each constant `names` of
    `fn`'s module by a call (`START = time.time()`), by name: asked by a
    refusal only (`anew_advice`), where one may make a new value in each
    process. None said of a name its statements do not tell."""
    target = target_of(fn)
    namespace, code = getattr(target, "__globals__", None), getattr(target, "__code__", None)
    if not isinstance(namespace, dict) or not isinstance(code, types.CodeType):
        return {}
    made = {}
    for name in names:
        try:
            found = binding_statements(name, namespace, code.co_filename) or []
        except ConfigurationError:  # its file edited since: nothing to say
            continue
        calls = [s for s in found if _calls(getattr(s, "value", None))]
        if calls:
            made[name] = "; ".join(ast.unparse(s)[:80] for s in calls)
    return made


def _calls(value: object) -> bool:
    return isinstance(value, ast.AST) and any(isinstance(n, ast.Call) for n in ast.walk(value))


def anew_advice(made: Mapping[str, str]) -> str:
    """What to do about the constants `made_by_calls` found (none: "")."""
    if not made:
        return ""
    return (
        "if such a statement read a setting given otherwise (the environment, a file), that is the change; "
        "if it makes a new value in each process (time.time(), datetime.now(), uuid4()), that value "
        "differs on every resume: read it inside the step, pass it as an argument when it is an input "
        "(of the workflow, handed on to the step), or give the step version= when it cannot change "
        "what the step returns"
    )


def said_detail(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """`SETTINGS.started differs` for each attribute whose digest differs
    between two steps' recorded parts, with what to do; "" when none is
    told (a run recorded before, or a difference the digests do not show)."""
    differ: dict[str, str] = {}  # one object read as `SETTINGS` and `flow.SETTINGS`: the shorter
    for key in sorted(k for k in old.keys() & new.keys() if k.startswith(SAID + NOW) and old[k] != new[k]):
        name, before, after = key[len(SAID) + len(NOW) :], _load(old[key]), _load(new[key])
        for path in sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p)):
            known = differ.setdefault(name.rpartition(".")[2] + path, name + path)
            differ[name.rpartition(".")[2] + path] = min(known, name + path, key=len)
    if not differ:
        return ""
    named = list(differ.values())
    shown = ", ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
    return f"{shown} {'differs' if len(named) == 1 else 'differ'}: {_ADVICE}"


def _load(text: str) -> dict[str, str]:
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
