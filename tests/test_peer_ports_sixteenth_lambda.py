"""The sixteenth round of the peers' own test cases (see
tests/test_peer_ports_sixteenth_state.py): DBOS's test_recovery_workflow
(tests/test_dbos.py) with a singleton the steps make themselves (fourteenth
round), here also named by a module-level lambda, which makes nothing at
import. In-process; executions are counted by the step bodies."""

from __future__ import annotations

import ast
import collections
from pathlib import Path
from typing import ClassVar

import pytest

import durable
from durable._fingerprint import singletons

CALLS: collections.Counter[str] = collections.Counter()


class Single(type):
    """A singleton metaclass (fourteenth round): `Cfg()` gives the one instance."""

    made: ClassVar[dict[type, object]] = {}

    def __call__(cls, *args: object) -> object:
        if cls not in Single.made:
            Single.made[cls] = super().__call__(*args)
        return Single.made[cls]


class Cfg(metaclass=Single):
    def __init__(self, k: int = 3) -> None:
        self.k = k


cfg_of = lambda: Cfg()  # noqa: E731  a module-level lambda: it makes nothing at import


@durable.step
def configured(x: int) -> int:
    CALLS["configured"] += 1
    return x * Cfg().k  # type: ignore[attr-defined]


@durable.workflow(run_id="made-by-the-step")
def uses_config(x: int) -> int:
    return configured(x)


def test_dbos_recovery_with_a_singleton_the_step_makes_and_a_lambda_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DBOS's test_recovery_workflow with the singleton made by the step
    itself (fourteenth round), here with a module-level lambda making it
    too: the lambda's body runs when it is called, not at import, so the
    instance the step made is no state the import made, and the completed
    run called again is answered. Seen failing: DefinitionChangedError
    ("Cfg changed"), the lambda's `Cfg()` counted as a call at import."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    Single.made.pop(Cfg, None)
    assert uses_config(2) == 6
    assert uses_config(2) == 6
    assert cfg_of() is Cfg()
    assert CALLS == {"configured": 1}


@pytest.mark.parametrize(
    ("text", "made"),
    [
        ("get = lambda: Cfg()", False),
        ("get = lambda: Cfg()\nget()", True),  # called at import: made then
        ("get = lambda c=Cfg(): c", True),  # a default runs at import
        ("run(lambda: Cfg())", True),  # handed to a call, which may call it
    ],
)
def test_a_named_lambda_makes_the_singleton_when_called(text: str, made: bool) -> None:
    """What the fix narrows, and what it keeps counting (fail closed)."""
    body = tuple(ast.parse(text).body)
    assert singletons._calls_at_import(body, "Cfg") is made

