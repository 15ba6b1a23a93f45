"""A workflow's definition as of a run's start: its body's own fingerprint
and those of every step and workflow it reaches, each fingerprinted afresh
(helpers and constants may have changed since decoration, a notebook cell
may have rebound them). Its fingerprint is what the run records.

It is resolved for every call (a completed run's re-call too), so it is
memoised by the one memo rule (`_fingerprint.memorule.Memo`): reused while
everything it was computed from holds, i.e. the workflow's own attributes,
everything the reach walk read (`referenced_objects` witnesses it), which
objects are steps and workflows, and what each fingerprint it combines was
computed from (their memo entries' witnesses count for it too)."""

from __future__ import annotations

import dis
import functools
import types
from typing import Any

from .._core.bound import binds, bound_digest
from .._core.definition import BODY_KEY, Definition
from .._core.spec import StepSpec, refingerprint, step_spec
from .._fingerprint.fingerprint import (
    IDENTITY,
    Fingerprint,
    combine,
    referenced_objects,
)
from .._fingerprint.memo import memo_fingerprint
from .._fingerprint.memorule import Memo
from .._fingerprint.reach import code_objects, is_builtin_value, target_of
from .._fingerprint.witness import witnessed

_DEFINITIONS: Memo[Definition] = Memo(size=256)


def definition_of(flow: Any) -> Definition:
    """`flow` is a `Workflow` (typed loosely: the two modules would import
    each other). A fresh copy each call: callers own what they are given."""
    fn, identity, version = witnessed(_flow_state, flow)[:3]
    found = _DEFINITIONS.get((id(fn), identity, version), fn, lambda: _definition(flow))
    return Definition(
        found.fingerprint, dict(found.steps), dict(found.parts), dict(found.by_spec),
        functools.partial(why_listed, fn), found.binding, bound_digest(found.binding),
        found.writers, dict(found.fns), dict(found.stamps),
    )  # fmt: skip


def why_listed(fn: Any, key: str) -> str | None:
    """Why step `key` counts although the body never calls it, when that is
    so: the body (with its nested functions) names it only as an attribute
    (`job.task`), and this module's global of that name holds the step (a
    module-level loop, `for task in (fetch, parse):`, leaves the last).
    The walk counts it all the same (`references`): `x.task` may be this
    very module's, read through an alias. None for every other step."""
    target = target_of(fn)
    code, globs = getattr(target, "__code__", None), getattr(target, "__globals__", {})
    if not isinstance(code, types.CodeType):
        return None
    loaded: set[str] = set()
    named: set[str] = set()
    for co in code_objects(code):
        named.update(co.co_names)
        loaded.update(i.argval for i in dis.get_instructions(co) if i.opname in _GLOBAL_LOADS)
    aliases = sorted(n for n in named if _step_key(globs.get(n)) == key.split("#")[0])
    if not aliases or any(n in loaded for n in aliases):
        return None
    alias = aliases[0]
    return (
        f"listed because the body names {alias!r} as an attribute only (`x.{alias}`) while "
        f"this module's global {alias!r} holds this step, left there by a module-level "
        f"statement such as `for {alias} in ...:`; it counts in case `x` is this module. "
        "If the workflow never calls it, rename the global or the attribute"
    )


_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def _step_key(obj: object) -> str | None:
    spec = step_spec(obj) if obj is not None else None
    return spec.name if spec is not None else None


def _definition(flow: Any) -> Definition:
    own = own_fingerprint(flow)
    found = Definition("", {}, {})
    _reach(flow, found, {id(flow)})
    found.steps[BODY_KEY] = own.value
    found.parts[BODY_KEY] = _recorded_parts(own)
    found.fns[BODY_KEY] = witnessed(_flow_state, flow)[0]
    found.fingerprint = combine(flow._identity, own.value, found.steps)
    return found


def _flow_state(flow: Any) -> tuple[Any, ...]:
    """What a definition reads of a workflow object (with_options copies
    share the first three, and with them a memo entry)."""
    return flow.fn, flow._identity, flow.version, flow.name


def own_fingerprint(flow: Any) -> Fingerprint:
    """The body's own fingerprint, computed for every call: a notebook
    cell may rebind a constant or helper it reads, or its file may have
    been edited since import (then this raises). The costly parts
    (parsing, compiling, tokenising a definition) are cached by text."""
    fn, identity, version = witnessed(_flow_state, flow)[:3]
    return memo_fingerprint(fn, name=identity, version=version, steps=False)


def _reach(flow: Any, found: Definition, seen: set[int]) -> None:
    for obj in referenced_objects(witnessed(_flow_state, flow)[0]):
        if is_builtin_value(obj):  # a constant: never a step or workflow
            continue
        spec = witnessed(step_spec, obj)
        other: Any = obj
        if spec is not None and id(spec) not in found.by_spec:
            witnessed(_spec_state, spec)
            fresh = refingerprint(spec)
            key = _unique_key(found.steps, spec.name, fresh.value)
            found.steps[key], found.parts[key] = fresh.value, _recorded_parts(fresh)
            found.by_spec[id(spec)] = fresh.value
            found.writers.append(spec.fn)
            found.fns[key] = spec.fn
            found.stamps[key] = fresh.stamps
            if binds(spec.fn):  # `durable.step(model.predict)`: the model
                found.binding.append(spec.fn)
        elif witnessed(_is_workflow, other) and id(other) not in seen:
            seen.add(id(other))
            own = own_fingerprint(other)
            name = witnessed(_flow_state, other)[3]
            found.steps[f"{name} (workflow)"] = own.value
            found.parts[f"{name} (workflow)"] = _recorded_parts(own)
            _reach(other, found, seen)


def _is_workflow(obj: object) -> bool:
    return getattr(type(obj), "__durable_workflow__", False) is True


def _spec_state(spec: StepSpec) -> tuple[Any, ...]:
    # A frozen dataclass, but what refingerprint and the key read of it is
    # witnessed anyway (object.__setattr__ gets past frozen).
    return spec.name, spec.fn, spec.pinned_name, spec.version, spec.deep


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
