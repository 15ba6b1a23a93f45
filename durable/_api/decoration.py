"""What `@durable.step` and `@durable.workflow` refuse where they are
written (a name or flag of the wrong type, a generator, something not
callable), before anything runs, and how they sit over `@staticmethod`
and `@classmethod`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._fingerprint.reach import default_name
from ..errors import ConfigurationError


def check_naming(kind: str, name: object, version: object) -> None:
    """A step's or workflow's `name=` and `version=`: a non-empty string or
    None. name=3 failed deep in the fingerprint ("'int' object has no
    attribute 'encode'"), name="" fell back to the function's name, and
    version=1.10 counted as "1.1" (any object by its str(), an address in
    it changing with every process)."""
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigurationError(
            f"{kind} name= takes a non-empty string, not {name!r} ({type(name).__name__})"
        )
    if version is not None and (not isinstance(version, str) or not version):
        raise ConfigurationError(
            f'{kind} version= takes a non-empty string, such as version="2", not {version!r} '
            f"({type(version).__name__})"
        )


def check_flags(**flags: object) -> None:
    # persist="False", a truthy string, recorded what was meant to stay out of the store.
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigurationError(
                f"{flag}= takes True or False, not {value!r} ({type(value).__name__})"
            )


def check_artifact_options(artifacts: object, policy: str, verify: str) -> None:
    if artifacts is not None and not callable(artifacts):
        raise ConfigurationError(
            "artifacts= takes a function of the step's result returning paths, "
            "e.g. artifacts=lambda result: [result.path]"
        )
    if policy not in ("rerun", "refuse"):
        raise ConfigurationError(f"artifacts_policy must be 'rerun' or 'refuse', not {policy!r}")
    if verify not in ("digest", "mtime"):
        raise ConfigurationError(f"verify must be 'digest' or 'mtime', not {verify!r}")


def check_validator(validate: object) -> None:
    if validate is None:
        return
    if not callable(validate) or inspect.iscoroutinefunction(validate):
        raise ConfigurationError(
            f"validate= takes a plain function of the step's output returning True when it "
            f"may be recorded, e.g. validate=lambda out: out['status'] == 'ok'; not {validate!r}"
        )


def outermost(method: staticmethod[Any, Any] | classmethod[Any, Any, Any], make: Callable[[Any], Any]) -> Any:
    """`@durable.step` (or `workflow`) written over `@staticmethod` or
    `@classmethod`: those bind only as the outermost decorator (under ours, a
    static step called on an instance was passed the instance, a classmethod
    was refused as not callable), so ours wraps the function and theirs goes
    back on top, as in the other order."""
    return type(method)(make(method.__func__))


def refuse_generators(f: Callable[..., Any]) -> None:
    if inspect.isgeneratorfunction(f) or inspect.isasyncgenfunction(f):
        kind = "an async generator" if inspect.isasyncgenfunction(f) else "a generator"
        raise ConfigurationError(
            f"{default_name(f)} is {kind} function (it yields); a step or workflow must return its "
            "value. Collect the items into a list and return that."
        )
    if not callable(f):
        # @durable.step("fetch") reads as naming the step: it passes the name as the function.
        hint = f"; to name it, pass name={f!r} (a keyword argument)" if isinstance(f, str) else ""
        if isinstance(f, property):  # the getter is the function: the property goes on top
            name = getattr(f.fget, "__qualname__", "the property")
            raise ConfigurationError(f"{name} is a property, which is not callable: put @property above "
                                     "the durable decorator, which then decorates its function")  # fmt: skip
        raise ConfigurationError(f"{f!r} is not callable: decorate a function{hint}")
