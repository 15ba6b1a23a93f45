"""What `durable run` reads from `--var` and `--input`: NAME=VALUE pairs,
JSON when the VALUE parses as JSON, else a string; and the refusals of a
value that would reach the workflow as another value than the one typed."""

from __future__ import annotations

import datetime
import enum
import inspect
import json
import shlex
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from .._errortext import PLACEHOLDER, near, shell_words, to_fill
from .common import UsageError


def parse_vars(items: list[str], flag: str = "--var") -> dict[str, Any]:
    """KEY=VALUE pairs; a VALUE that parses as strict JSON is that JSON value
    (NaN and Infinity are not JSON: they stay strings)."""
    out: dict[str, Any] = {}
    given: dict[str, str] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not _named(key, flag):
            raise UsageError(f"{flag} {item!r} must look like NAME=VALUE{_meant(flag, key, text)}")
        if key in given:  # the last one would win, the first dropped without a word
            raise UsageError(_twice(flag, given[key], item))
        given[key] = item
        if text == PLACEHOLDER:  # a printed line pasted before its VALUE was filled in
            raise UsageError(
                f"{flag} {item}: {PLACEHOLDER} is a placeholder: put the value in its place "
                f"(JSON or a string; {flag} {shell_words(f'{key}={json.dumps(PLACEHOLDER)}')} for the word "
                f"{PLACEHOLDER} itself); nothing was run"
            )
        try:
            out[key] = json.loads(text, parse_constant=_not_json)
        except ValueError:
            out[key] = text
    return out


def _named(key: str, flag: str) -> bool:
    """A name; for `--input` also NAME@POSITION, an answer bound to the wait
    at that position (`durable show` prints it: 3, 2.0.1)."""
    name, at, position = key.partition("@")
    if at and flag == "--input":
        return name.isidentifier() and all(p.isascii() and p.isdigit() for p in position.split("."))
    return key.isidentifier()


def _meant(flag: str, key: str, text: str) -> str:
    """The pair a near miss meant: `dry-run=false` (a flag's spelling) is
    the parameter `dry_run`; `n = 5` has spaces the shell kept."""
    name = key.strip().replace("-", "_")
    if not name.isidentifier():
        return ""
    return f": {flag} {shell_words(f'{name}={text.strip()}')}?" if text.strip() else f"; give its value: {flag} {name}=VALUE"


def _twice(flag: str, first: str, second: str) -> str:
    name = first.partition("=")[0]
    why = (
        "; one resume answers one wait_for() of a name, the next wait of it is answered "
        "by the next resume"
        if flag == "--input"
        else ""
    )
    return f"{flag} {name} is given twice ({first}, then {second}): give each name once{why}"


def as_vars(arguments: dict[str, Any], read: Callable[[list[str]], dict[str, Any]] | None = None) -> str:
    """Arguments as the --var flags that `read` (parse_vars, or the
    workflow's by_annotation) reads back as them, quoted for a shell; one
    it does not give back as itself (a tuple, an object) is left as
    NAME=VALUE to fill in."""
    flags = []
    for name, value in arguments.items():
        text = _given_as(name, value, read)
        flags.append("--var " + shlex.quote(f"{name}={text}") if text is not None else to_fill("--var", [name]))
    return " ".join(flags)


def not_given(arguments: dict[str, Any], read: Callable[[list[str]], dict[str, Any]] | None = None) -> list[str]:
    """The arguments no --var gives back as themselves (a tuple, an object)."""
    return [name for name, value in arguments.items() if _given_as(name, value, read) is None]


def _given_as(name: str, value: Any, read: Callable[[list[str]], dict[str, Any]] | None) -> str | None:
    """The text a --var gives `value` back as itself with (`read`), else None."""
    try:
        text = _var_text(value)
        return text if (read or parse_vars)([f"{name}={text}"])[name] == value and type(value) is not tuple else None
    except (TypeError, ValueError, UsageError):
        return None


def _var_text(value: Any) -> str:
    """What --var is given for a value: JSON, or the text by_annotation makes
    a path, a date or time, an Enum member from."""
    if isinstance(value, enum.Enum):
        value = value.value
        return value if isinstance(value, str) else json.dumps(value, allow_nan=False)
    if isinstance(value, (PurePath, datetime.date, datetime.time)):
        return str(value) if isinstance(value, PurePath) else value.isoformat()
    return json.dumps(value, allow_nan=False)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_input_numbers(items: list[str]) -> None:
    """An input has no annotation to tell text from number: `--input
    version=1.10` read as JSON is 1.1, which the wait would record as the
    answer though nobody typed it (`_check_as_typed`)."""
    for item in items:
        _check_as_typed(item, "--input")


def _check_as_typed(item: str, flag: str) -> None:
    """A number that JSON does not give back as typed (`1.10`, `1e3`, digits
    past a float's precision) is refused, saying how to pass either reading."""
    name, _, text = item.partition("=")
    value = parse_vars([item], flag=flag)[name]
    if type(value) in (int, float) and json.dumps(value) != text.strip():
        raise UsageError(
            f"{flag} {item} reads as the JSON number {json.dumps(value)}, not as typed: "
            f"for the text, quote it as a JSON string: {flag} '{name}={json.dumps(text)}'; "
            f"for the number, write {flag} {name}={json.dumps(value)}"
        )


def check_names(workflow: str, fn: Callable[..., Any], variables: dict[str, Any]) -> None:
    """Every --var names a parameter a call by name can set."""
    params = inspect.signature(fn).parameters
    for name in variables:  # a call by name cannot set these (under **extra it went there)
        kind = params[name].kind if name in params else None
        if kind in _BY_POSITION:
            raise UsageError(
                f"{_BY_POSITION[kind].format(name)}, which --var cannot give: durable run "
                f"passes the workflow's arguments by name. {_INSTEAD[kind].format(name)}, or "
                "call the workflow from Python"
            )
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(variables) - set(params))
    if unknown:
        meant = near(unknown[0], params, cutoff=0.8)  # as resume(run_id, cuont=2) says it
        raise UsageError(
            f"{workflow} has no parameter {', '.join(unknown)}; {f'did you mean {meant[0]}? It' if meant else 'it'} "
            f"takes {', '.join(params) or 'none'}"
            f" (if {unknown[0]} names a durable.wait_for(), answer it with --resume "
            f"--input {shell_words(f'{unknown[0]}=VALUE')})"
        )


_BY_POSITION = {
    inspect.Parameter.VAR_POSITIONAL: "{0} is *{0} (extra positional arguments)",
    inspect.Parameter.POSITIONAL_ONLY: "{0} is positional-only (before the /)",
}
_INSTEAD = {
    inspect.Parameter.VAR_POSITIONAL: "Give it a list parameter instead ({0}: list[int], "
    "--var '{0}=[1, 2]')",
    inspect.Parameter.POSITIONAL_ONLY: "Make it a plain parameter (remove the /)",
}
