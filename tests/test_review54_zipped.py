"""Plugins imported by a built name (`import_module(f"plugins.{name}")`)
from a package in a zip archive (`sys.path` holding `app.zip`,
`zipimport`): `packagefiles` walked `app.zip/plugins` as a folder, found
no file, and counted the package by the digest of nothing, so an edited
plugin in a rebuilt archive replayed the old plugin's output (seen: a run
suspended with `run` returning `x + 1`, resumed after the archive was
rebuilt with `x + 100`: `value 2`). The archive's module files now count
by their text, as a folder's do."""

from __future__ import annotations

import importlib
import sys
import zipfile
from pathlib import Path

import pytest

from durable._fingerprint.packagefiles import package_parts


def _archive(path: Path, add: int) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("zipped54/__init__.py", "")
        z.writestr("zipped54/a.py", f"def run(x):\n    return x + {add}\n")


def _step(name: str) -> object:
    return importlib.import_module(f"zipped54.{name}")


def test_a_zipped_package_counts_by_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "app.zip"
    _archive(archive, 1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "zipped54", raising=False)
    package = importlib.import_module("zipped54")
    first = package_parts(_step.__code__, [package])
    _archive(archive, 1)
    assert package_parts(_step.__code__, [package]) == first  # the same files: the same digest
    _archive(archive, 100)
    # was: the same digest (that of no file), the old plugin's output replayed
    assert package_parts(_step.__code__, [package]) != first
    monkeypatch.delitem(sys.modules, "zipped54")
