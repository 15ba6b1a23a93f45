"""A workflow's definition as of a run's start: its body's own fingerprint
and those of every step and workflow it reaches, each fingerprinted afresh
(helpers and constants may have changed since decoration, a notebook cell
may have rebound them). Its fingerprint is what the run records."""

from __future__ import annotations

from typing import Any

from .._core.definition import BODY_KEY, Definition
from .._core.spec import refingerprint, step_spec
from .._fingerprint.fingerprint import (
    IDENTITY,
    Fingerprint,
    combine,
    referenced_objects,
)
from .._fingerprint.memo import memo_fingerprint


def definition_of(flow: Any) -> Definition:
    """`flow` is a `Workflow` (typed loosely: the two modules would import
    each other)."""
    own = own_fingerprint(flow)
    found = Definition("", {}, {})
    _reach(flow, found, {id(flow)})
    found.steps[BODY_KEY] = own.value
    found.parts[BODY_KEY] = _recorded_parts(own)
    found.fingerprint = combine(flow._identity, own.value, found.steps)
    return found


def own_fingerprint(flow: Any) -> Fingerprint:
    """The body's own fingerprint, computed for every call: a notebook
    cell may rebind a constant or helper it reads, or its file may have
    been edited since import (then this raises). The costly parts
    (parsing, compiling, tokenising a definition) are cached by text."""
    return memo_fingerprint(flow.fn, name=flow._identity, version=flow.version, steps=False)


def _reach(flow: Any, found: Definition, seen: set[int]) -> None:
    for obj in referenced_objects(flow.fn):
        spec = step_spec(obj)
        other: Any = obj
        if spec is not None and id(spec) not in found.by_spec:
            fresh = refingerprint(spec)
            key = _unique_key(found.steps, spec.name, fresh.value)
            found.steps[key], found.parts[key] = fresh.value, _recorded_parts(fresh)
            found.by_spec[id(spec)] = fresh.value
        elif getattr(type(other), "__durable_workflow__", False) is True and id(other) not in seen:
            seen.add(id(other))
            own = own_fingerprint(other)
            found.steps[f"{other.name} (workflow)"] = own.value
            found.parts[f"{other.name} (workflow)"] = _recorded_parts(own)
            _reach(other, found, seen)


def _unique_key(steps: dict[str, str], name: str, fp: str) -> str:
    """Two steps with one name (made by one factory, or in two modules) both
    count; the second is listed as `name#2`, in the order the body names them."""
    key, n = name, 1
    while key in steps and steps[key] != fp:
        n += 1
        key = f"{name}#{n}"
    return key


def _recorded_parts(fp: Fingerprint) -> dict[str, str]:
    # The identity goes with the parts so that a refusal can say "renamed".
    return {**fp.parts, IDENTITY: fp.identity}
