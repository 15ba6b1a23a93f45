"""Helpers of other modules past the number looked at (`helperreads._FOLLOWED`),
or whose text is not what runs, are not told apart: they stand for a reader
of every name a step writes (fail closed). Before, they were left out, and
a workflow reading a step's write through one replayed the step without it."""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable._fingerprint import helperreads

FLOW = """
import helpers_far

STATE = {"mode": "slow"}

def wf():
    return helpers_far.first()
"""
FAR = """
import flow_far

def first():
    return second()

def second():
    return flow_far.STATE["mode"]
"""


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    (tmp_path / "flow_far.py").write_text(FLOW)
    (tmp_path / "helpers_far.py").write_text(FAR)
    monkeypatch.syspath_prepend(str(tmp_path))
    import flow_far

    yield vars(flow_far)
    for name in ("flow_far", "helpers_far"):
        sys.modules.pop(name, None)


def _readers(globs: dict[str, object]) -> list[frozenset[str]]:
    wf = ast.parse(textwrap.dedent(FLOW)).body[-1]
    return [names for _, names, _ in helperreads.helper_readers([wf], globs, frozenset({"STATE"}))]


def test_a_helper_past_the_limit_reads_every_name_written(
    modules: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _readers(modules) == [frozenset({"STATE"})]  # second(), two helpers down
    monkeypatch.setattr(helperreads, "_FOLLOWED", 1)  # first() looked at, second() not
    assert frozenset({"STATE"}) in _readers(modules)


def test_a_helper_whose_file_changed_reads_every_name_written(
    modules: dict[str, object], tmp_path: Path
) -> None:
    (tmp_path / "helpers_far.py").write_text(FAR.replace("second()", "third()") + "\n# edited\n")
    assert frozenset({"STATE"}) in _readers(modules)
