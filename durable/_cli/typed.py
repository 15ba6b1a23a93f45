"""The values of `durable run --var` checked and made by the workflow's
annotations: a `Path`, `date`, `datetime`, `time` or `Enum` parameter
takes the text as that type (`--var day=2024-05-31`), and a value of
another type than a str, bool, int, float, list or dict annotation says
is refused, saying how to pass it (`values` reads the pairs)."""

from __future__ import annotations

import datetime
import enum
import inspect
import json
import types
import typing
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from .common import UsageError
from .values import _check_as_typed, parse_vars

# The annotations a typed value is checked against: (what it is called,
# the types its value may have). JSON `true` is an int to Python: an int
# or a float parameter does not take it.
_SCALARS: dict[Any, tuple[str, tuple[type, ...]]] = {
    str: ("a str", (str,)),
    bool: ("a bool", (bool,)),
    int: ("an int", (int,)),
    float: ("a float", (int, float)),
    list: ("a list", (list,)),  # `list[str]` too: its items are not looked at
    dict: ("a dict", (dict,)),
}


def check_types(workflow: str, fn: Callable[..., Any], items: list[str]) -> None:
    """A value of another type than a parameter's `str`, `bool`, `int` or
    `float` annotation would run the workflow with another value than the one
    typed: `--var version=1.10` for a `str` is the float 1.1, `--var
    dry_run=False` for a `bool` the string 'False', which is true. Refused,
    saying how to write it; for any other parameter, a number not given
    back as typed, as for an input."""
    expected, hints = _scalar_parameters(fn), _hints(fn)
    for item in items:
        name, _, text = item.partition("=")
        value = parse_vars([item])[name]
        if name not in expected:  # no annotation to say which reading: as an input
            if not _as_typed(hints.get(name)):
                _check_as_typed(item, "--var")
            continue
        (what, types), nullable = expected[name]
        if (value is None and nullable) or (isinstance(value, types) and not _bool_as_number(value, types)):
            continue
        read = (
            f"the string {value!r}" if isinstance(value, str)
            else f"JSON ({type(value).__name__} {value!r})"
        )  # fmt: skip
        raise UsageError(
            f"--var {item} reads as {read}, but {workflow} takes {name} as {what}: "
            + _how(name, text, types)
        )


def by_annotation(workflow: str, fn: Callable[..., Any], items: list[str]) -> dict[str, Any]:
    """The --var values of parameters annotated with a class JSON has no
    value of, as the Python API would pass them: `Path`, `date`, `datetime`,
    `time`, an `Enum`. The str typed reached the workflow: another type than
    its code expects, and another argument digest than the API's call gives,
    so a run started from one side was refused from the other. A value no
    such class takes, or of another class than annotated, is refused."""
    hints = _hints(fn)
    out = parse_vars(items)
    for item in items:
        name, _, typed = item.partition("=")
        hint, value = hints.get(name), out[name]
        cls = _class_of(hint)
        if cls is None or cls in _SCALARS or (value is None and cls is not hint):
            continue  # no class to go by, or check_types' own, or None for `X | None`
        # The text as typed, unless quoted as a JSON string: `1.10` is no float here.
        text = value if isinstance(value, str) else None if value is None else typed
        wrong = f"--var {item} is no {cls.__name__} for {workflow}'s {name}"
        out[name] = _made(cls, value, text, name, wrong)
    return out


def _class_of(hint: Any) -> Any:
    """The class a parameter is annotated with, `X` of `X | None` too; else None."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return _plain(args[0] if len(args) == 1 and len(typing.get_args(hint)) == 2 else hint)


def _as_typed(hint: Any) -> bool:
    """Whether a parameter takes the text typed (a path, a date, a time),
    not its JSON reading: `1.10` is no number to refuse there."""
    cls = _class_of(hint)
    return isinstance(cls, type) and issubclass(cls, (PurePath, datetime.date, datetime.time))


def _made(cls: type, value: Any, text: str | None, name: str, wrong: str) -> Any:
    try:
        if issubclass(cls, enum.Enum):
            found = [m for m in cls if value == m.value or text == m.name]
            if found:
                return found[0]
            raise UsageError(f"{wrong}: write one of {', '.join(str(m.value) for m in cls)}")
        if issubclass(cls, PurePath) and text is not None:
            return cls(text)
        if issubclass(cls, (datetime.date, datetime.time)):
            return cls.fromisoformat(str(text))
        if isinstance(value, cls):
            return value
    except (ValueError, TypeError) as e:
        if isinstance(e, ValueError):
            raise UsageError(f"{wrong}: write it as ISO 8601, e.g. --var {name}={_iso(cls)}") from None
        return value  # a class isinstance cannot check (a Protocol): taken as given
    raise UsageError(
        f"{wrong}: --var gives JSON values (a str, number, bool, null, list or dict), or a "
        "Path, date, datetime, time or Enum by the annotation; call the workflow from Python "
        "to pass another"
    )


def _iso(cls: type) -> str:
    return {datetime.datetime: "2024-05-31T12:30:00", datetime.time: "12:30:00"}.get(cls, "2024-05-31")


def _bool_as_number(value: Any, types: tuple[type, ...]) -> bool:
    return isinstance(value, bool) and bool not in types


def _how(name: str, text: str, types: tuple[type, ...]) -> str:
    if types == (str,):
        return f"to pass the text, quote it as a JSON string: --var '{name}={json.dumps(text)}'"
    if types == (bool,):
        return f"write it as JSON, --var {name}=true or --var {name}=false"
    if types == (list,):
        items = json.dumps(text.split(",") if text else ["a"])
        return f"write it as a JSON list, e.g. --var '{name}={items}'"
    if types == (dict,):
        return f"""write it as a JSON object, e.g. --var '{name}={{"key": 1}}'"""
    return f"write it as a JSON number, e.g. --var {name}={'5' if int in types and float not in types else '0.5'}"


def _scalar_parameters(fn: Callable[..., Any]) -> dict[str, tuple[tuple[str, tuple[type, ...]], bool]]:
    """The parameters annotated str, bool, int or float (True: `| None`, which
    takes null too)."""
    out = {}
    for name, hint in _hints(fn).items():
        args = typing.get_args(hint)
        if _plain(hint) in _SCALARS:
            out[name] = (_SCALARS[_plain(hint)], False)
        elif len(args) == 2 and type(None) in args:
            inner = _plain(args[0] if args[1] is type(None) else args[1])
            if inner in _SCALARS:
                out[name] = (_SCALARS[inner], True)
    return out


def _plain(hint: Any) -> Any:
    """`list[str]` as `list`, `dict[str, int]` as `dict`; any other hint as itself."""
    origin = typing.get_origin(hint)
    if origin in (list, dict):
        return origin
    return hint if isinstance(hint, type) else None  # `x: [int]` is no key of _SCALARS


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """fn's annotations resolved, each on its own when not all of them do:
    one naming what only a type checker imports (`if TYPE_CHECKING:`) must
    not leave `dry_run: bool` unchecked. One that does not resolve is left out."""
    try:
        return typing.get_type_hints(fn)
    except Exception:
        pass
    scope = getattr(inspect.unwrap(fn), "__globals__", {})
    out = {}
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        one = types.SimpleNamespace(__annotations__={name: annotation})
        try:
            out.update(typing.get_type_hints(one, globalns=scope))
        except Exception:  # that parameter only goes unchecked
            continue
    return out
