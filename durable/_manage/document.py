"""The JSON document of a run (`durable show --json`, `durable runs --json`,
the progress file): one builder for all of them, so an outside reader sees
the same fields whichever it reads. `SCHEMA` is its version; a field is
never renamed or removed without raising it."""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from typing import Any

from .._storage.keys import format_position
from .._valuetext import preview_of
from .history import StepInfo
from .runs import RunInfo

SCHEMA = 1
_PREVIEW = 2000  # characters of a typed preview of a value that is not JSON


def iso(t: float | None) -> str | None:
    """UTC ISO 8601 with milliseconds, or None for an unknown time."""
    if not t:
        return None
    stamp = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def run_doc(info: RunInfo) -> dict[str, Any]:
    return {
        "workflow": info.workflow,
        "runId": info.run_id,
        "status": info.status,
        "fingerprint": info.fingerprint,
        "startedAt": iso(info.created),
        "updatedAt": iso(info.updated),
        "completedSteps": info.steps,
        "currentStep": info.position,
        "stepsTotal": info.steps_total,
        "error": info.error,
        "reason": info.reason,
        "durability": info.durability,
        "resumeRefused": info.refused,
    }


def step_doc(s: StepInfo, *, values: bool = False) -> dict[str, Any]:
    doc = {
        # An int in the body; a string such as "2.0.1" inside an asyncio task.
        "position": s.position if isinstance(s.position, int) else format_position(s.position),
        "kind": s.kind,
        "name": s.name,
        "status": s.status,
        "fingerprint": s.fingerprint,
        "outputPreview": s.preview,
        "outputSize": s.output_size,
        "error": s.error,
        "attempts": s.attempts,
        "failedAttempts": [
            {"type": f.type, "message": f.message, "at": iso(f.at)} for f in s.failures
        ],
        "startedAt": iso(s.started),
        "endedAt": iso(s.ended),
        "durationSeconds": s.duration,
        "artifacts": [dict(a) for a in s.artifacts],
        "childRunId": s.child,
    }
    if values:
        doc.update(value_doc(lambda: s.value))
    return doc


def show_document(
    info: RunInfo, steps: Sequence[StepInfo], *, values: bool = False
) -> dict[str, Any]:
    """The run, then its steps in position order (pending ones last). With
    `values`, every output and the run's arguments in full."""
    doc: dict[str, Any] = {"schema": SCHEMA, **run_doc(info)}
    if values:
        doc["arguments"] = value_doc(lambda: info.arguments)
    doc["steps"] = [step_doc(s, values=values) for s in steps]
    return doc


def value_doc(load: Any) -> dict[str, Any]:
    """`value` as JSON when it is exactly JSON data (`valueType` "json"),
    else a typed preview (`valueType` the qualified type name). A value that
    cannot be loaded here (pickles refused, classes not importable, damaged)
    is null with `valueType` "undecoded" and the reason in `valueError`."""
    try:
        value = load()
    except Exception as e:
        return {"value": None, "valueType": "undecoded", "valueError": f"{type(e).__name__}: {e}"}
    if _is_json(value):
        return {"value": value, "valueType": "json"}
    kind = type(value)
    return {"value": preview_of(value, _PREVIEW), "valueType": f"{kind.__module__}.{kind.__qualname__}"}


def _is_json(value: Any, depth: int = 0) -> bool:
    """Plain JSON that reads back as the same value and type: no tuples,
    sets, non-string keys, NaN or infinities."""
    if depth > 100:
        return False
    if value is None or isinstance(value, (bool, str)) or type(value) is int:
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(_is_json(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _is_json(v, depth + 1) for k, v in value.items())
    return False
