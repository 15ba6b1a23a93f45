"""A name bound by `from tables import TABLE` (or `TABLE = tables.TABLE`)
counts by the statement of `tables` that binds TABLE. After `tables` is edited and reloaded, the name
still holds the old table: counted by the new text, the old table's
output was stored under the new text's key and served once the import ran
again (in this process, or in a fresh one) where the call computes anew."""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path

import pytest

APP = """\
import durable
{binding}

@durable.step(cache=True)
def look(key):
    with open({counts!r}, "a") as f:
        f.write("x")
    return TABLE[key]
"""


def _write(path: Path, text: str) -> None:
    # A later mtime without a sleep: a reload must not take a cached .pyc.
    path.write_text(text)
    when = path.stat().st_mtime + 5 if path.exists() else 0
    os.utime(path, (when, when))


@pytest.mark.parametrize(
    "binding",
    ["from reloaded_tables import TABLE", "import reloaded_tables\nTABLE = reloaded_tables.TABLE"],
    ids=["from-import", "alias"],
)
def test_a_table_imported_from_a_module_reloaded_since_is_not_served_the_new_texts_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binding: str
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    tables, app, counts = "reloaded_tables", "reloaded_app", tmp_path / "counts"
    _write(tmp_path / f"{tables}.py", "TABLE = {'a': 1}\n")
    _write(tmp_path / f"{app}.py", APP.format(binding=binding, counts=str(counts)))
    try:
        module = importlib.import_module(app)
        assert module.look("a") == 1
        _write(tmp_path / f"{tables}.py", "N = 0\nTABLE = {'a': 1}\n")
        importlib.reload(sys.modules[tables])  # another object, what the text makes: a hit
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert module.look("a") == 1
        _write(tmp_path / f"{tables}.py", "TABLE = {'a': 22}\n")
        importlib.reload(sys.modules[tables])  # `app`'s TABLE is still {'a': 1}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert module.look("a") == 1  # what its body computes: not cached
        module = importlib.reload(module)  # the import runs again: {'a': 22}
        assert module.look("a") == 22  # was served 1
        assert counts.read_text() == "xxx"
        assert "TABLE no longer holds what reloaded_tables.TABLE holds" in str(caught[0].message)
    finally:
        for name in (tables, app):
            sys.modules.pop(name, None)


def test_a_table_read_through_a_package_reloaded_since_is_not_served_the_new_texts_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`TABLE = pkg.tables.TABLE` was not refused as `TABLE = tables.TABLE`
    is: a fresh process whose table gives 22 was served the 1 the old table
    gave, stored under the new text's key."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    package, app, counts = "reloaded_pkg", "reloaded_pkg_app", tmp_path / "counts"
    (tmp_path / package).mkdir()
    _write(tmp_path / package / "__init__.py", "")
    _write(tmp_path / package / "tables.py", "TABLE = {'a': 1}\n")
    binding = f"import {package}.tables\nTABLE = {package}.tables.TABLE"
    _write(tmp_path / f"{app}.py", APP.format(binding=binding, counts=str(counts)))
    try:
        module = importlib.import_module(app)
        assert module.look("a") == 1
        _write(tmp_path / package / "tables.py", "TABLE = {'a': 22}\n")
        importlib.reload(sys.modules[f"{package}.tables"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert module.look("a") == 1  # what its body computes: not cached
        assert "TABLE no longer holds what reloaded_pkg.tables.TABLE holds" in str(
            caught[0].message
        )
        assert importlib.reload(module).look("a") == 22  # was served 1
        assert counts.read_text() == "xxx"
    finally:
        for name in (package, f"{package}.tables", app):
            sys.modules.pop(name, None)


@pytest.mark.parametrize("made", ["dict(reloaded_made.TABLE)", "{**reloaded_made.TABLE}"])
def test_a_table_made_from_a_module_reloaded_since_is_not_served_the_new_texts_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: str
) -> None:
    """`TABLE = dict(tables.TABLE)` holds a copy of the old table after
    `tables` is reloaded, counted by the new text: a fresh process whose
    table gives 22 was served the 1 the copy gave."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    tables, app, counts = "reloaded_made", "reloaded_made_app", tmp_path / "counts"
    _write(tmp_path / f"{tables}.py", "TABLE = {'a': 1}\n")
    binding = f"import {tables}\nTABLE = {made}"
    _write(tmp_path / f"{app}.py", APP.format(binding=binding, counts=str(counts)))
    try:
        module = importlib.import_module(app)
        assert module.look("a") == 1
        _write(tmp_path / f"{tables}.py", "N = 0\nTABLE = {'a': 1}\n")
        importlib.reload(sys.modules[tables])  # an equal table: still a hit
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert module.look("a") == 1
        _write(tmp_path / f"{tables}.py", "TABLE = {'a': 22}\n")
        importlib.reload(sys.modules[tables])
        for _ in range(2):  # until the statement runs again
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert module.look("a") == 1  # what its body computes: not cached
            assert "TABLE was made from reloaded_made.TABLE" in str(caught[0].message)
        assert importlib.reload(module).look("a") == 22  # was served 1
        assert counts.read_text() == "xxxx"
    finally:
        for name in (tables, app):
            sys.modules.pop(name, None)


def test_a_name_rebound_after_its_import_is_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    tables, app = "rebound_tables", "rebound_app"
    _write(tmp_path / f"{tables}.py", "TABLE = {'a': 1}\n")
    text = f"import durable\nfrom {tables} import TABLE\nTABLE = dict(TABLE, b=2)\n\n"
    text += "@durable.step(cache=True)\ndef look(key):\n    return TABLE[key]\n"
    _write(tmp_path / f"{app}.py", text)
    try:
        look = importlib.import_module(app).look
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert look("b") == 2 and look("b") == 2
        assert not caught, caught[0].message  # cached, not refused
    finally:
        for name in (tables, app):
            sys.modules.pop(name, None)
