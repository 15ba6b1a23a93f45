"""Which attribute of a global counted by what it holds differs, for a
refusal to name it (`now SETTINGS changed (SETTINGS.started differs ...)`):
a short digest of each attribute, kept beside the part that counts the
whole (`analysis.SAID`), never hashed into a fingerprint.

Pure standard library."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .analysis import NOW, SAID
from .attributes import attribute_digests

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


def said_detail(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """`SETTINGS.started differs` for each attribute whose digest differs
    between two steps' recorded parts, with what to do; "" when none is
    told (a run recorded before, or a difference the digests do not show)."""
    differ: dict[str, str] = {}  # one object read as `SETTINGS` and `flow.SETTINGS`: the shorter
    for key in sorted(k for k in old.keys() & new.keys() if k.startswith(SAID) and old[k] != new[k]):
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
