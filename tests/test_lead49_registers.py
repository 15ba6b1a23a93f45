"""A module of the user's that a step's body imports only in a branch is
never imported to fingerprint the step when importing it does work: not only
top-level calls (`train()`), but a decorator that registers the function in
another module's registry (`@render.register(int)` of a singledispatch
function elsewhere, `@app.route("/")`, a plugin registry). Durable imported
such a file to fingerprint the step, so the registration ran in every
process, and a program whose branch was never taken computed another value
under durable than alone (`render(5)` gave "int" where the program gives
"obj"). Such a file counts by its text, as one calling `train()` does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import durable
from durable._fingerprint import modfiles

RENDER = """
from functools import singledispatch

@singledispatch
def render(x):
    return "obj"
"""

PLUG = """
from render49 import render

@render.register(int)
def _(x):
    return "int"
"""

QUIET = """
import functools
from dataclasses import dataclass
from functools import singledispatch

import durable


@singledispatch
def own(x):
    return 1


@own.register(int)
def _(x):
    return 2


@dataclass(frozen=True)
class Point:
    x: int

    @property
    def double(self) -> int:
        return self.x * 2

    @double.setter
    def double(self, v: int) -> None:
        pass


@functools.lru_cache(maxsize=None)
def cached(x):
    return x


@durable.step(retries=2)
def s(x):
    return x
"""


def test_a_file_registering_in_another_module_is_not_imported_to_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "render49.py").write_text(RENDER)
    (tmp_path / "plug49.py").write_text(PLUG)
    monkeypatch.syspath_prepend(str(tmp_path))
    from render49 import render  # type: ignore[import-not-found]

    flag: list[bool] = []

    @durable.step
    def show(x: int) -> str:
        if flag:
            import plug49  # type: ignore[import-not-found]  # noqa: F401
        return str(render(x))

    @durable.workflow(store=str(tmp_path / "store"))
    def flow() -> str:
        return show(5)

    try:
        assert flow() == "obj" and "plug49" not in sys.modules
        assert modfiles.works_at_import("plug49") is not None  # counted by its text
    finally:
        for name in ("render49", "plug49"):
            sys.modules.pop(name, None)


def test_decorators_that_register_nothing_elsewhere_are_no_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "quiet49.py").write_text(QUIET)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert modfiles.works_at_import("quiet49") is None
