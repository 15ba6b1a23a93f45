"""What is found once per code object is found per function object's code
by identity: two functions of the same name, first line and body in two
files have equal code objects (`==` does not look at the file), and what
the module around one does is not the other's. Keyed by equality, a step
`work` of the fault campaign's flows took the state another test module's
`work` writes, and its argument digest differed from a fresh process's:
the resume was refused ("arguments changed")."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from durable._core.written import with_written
from durable._fingerprint.stepstate import state_written

_MODULE = """
import durable
STATE = {{}}

@durable.step
def work(i):
    STATE["k"] = i
    return i

@durable.step
def read():
    return {read}
"""


def test_equal_code_in_two_modules_is_found_for_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "writes_read.py").write_text(_MODULE.format(read='STATE.get("k")'))
    (tmp_path / "writes_alone.py").write_text(_MODULE.format(read="0"))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        read = importlib.import_module("writes_read")
        alone = importlib.import_module("writes_alone")
        assert read.work.__wrapped__.__code__ == alone.work.__wrapped__.__code__  # equal, not the same
        assert state_written(read.work.__wrapped__) == ("STATE",)
        assert state_written(alone.work.__wrapped__) == ()
    finally:
        sys.modules.pop("writes_read", None)
        sys.modules.pop("writes_alone", None)


_SWAPPED = """
import durable
STATE = {}

def quiet(i):
    return i

def writes(i):
    STATE["k"] = i
    return i

@durable.step
def read():
    return STATE.get("k")
"""


def test_a_function_known_to_write_nothing_is_looked_at_again_when_its_code_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`with_written` keeps, by code object, which functions write nothing
    another step reads: a function given another's code (`__code__`, or a
    `__wrapped__` set on it) is that other's writes, not the quiet answer
    found for it before."""
    (tmp_path / "swapped_code.py").write_text(_SWAPPED)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        mod = importlib.import_module("swapped_code")
        digest = "0" * 32
        assert with_written(mod.quiet, digest) == digest  # found once: quiet
        assert with_written(mod.quiet, digest) == digest  # (known)
        mod.STATE["k"] = 1
        wrapped = mod.quiet
        wrapped.__wrapped__ = mod.writes
        assert with_written(wrapped, digest) != digest
        del wrapped.__wrapped__
        mod.quiet.__code__ = mod.writes.__code__
        assert with_written(mod.quiet, digest) != digest
    finally:
        sys.modules.pop("swapped_code", None)
