"""A fault of durable's own is never shown as the user's mistake: the
frames of durable's code it passed through stay in the traceback (`_calls.
users_frames` cuts them from a refusal or a call that does not bind). A
fault is simulated by code compiled under durable's package path, as if
one of its modules held it: a TypeError in finding a workflow's signature
was marked the caller's (`wf(): ...`, as if the call did not bind) and
shown at the user's line alone; a library raising for durable's wrong
call (`json.loads(5)` under `open_store`) was shown at the user's line
and the library's, with no frame of durable's."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._api import workflow as workflow_module
from durable._errortext import PACKAGE
from durable._storage import factory

FAULTS = """
import json

def signature_of(fn):
    raise TypeError("a fault of durable's")

def _not_a_broken_url(folder):
    return json.loads(5)
"""


@pytest.fixture
def fault(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Callable[..., Any]]]:
    """Functions whose frames are durable's (as a user runs: conftest keeps every frame)."""
    monkeypatch.delenv("DURABLE_TRACEBACK", raising=False)
    held: dict[str, Any] = {}
    exec(compile(FAULTS, str(Path(PACKAGE) / "_review53_fault.py"), "exec"), held)
    yield held


def _ours(error: BaseException) -> list[str]:
    return [f.name for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(PACKAGE)]


def test_a_fault_finding_a_signature_is_not_the_callers_mistake(
    fault: dict[str, Callable[..., Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workflow_module, "signature_of", fault["signature_of"])

    @durable.workflow(store=durable.testing.memory_store())
    def wf(x: int) -> int:
        return x

    with pytest.raises(TypeError) as caught:
        wf(1)
    assert str(caught.value) == "a fault of durable's"  # was "...wf(): a fault of durable's"
    assert "signature_of" in _ours(caught.value), _ours(caught.value)  # was []


def test_a_library_raising_for_durables_call_keeps_durables_frames(
    fault: dict[str, Callable[..., Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(factory, "_not_a_broken_url", fault["_not_a_broken_url"])
    with pytest.raises(TypeError) as caught:
        durable.open_store(str(tmp_path / "store"))
    assert "_not_a_broken_url" in _ours(caught.value), _ours(caught.value)  # was []
