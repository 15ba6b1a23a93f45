"""A module inside a package run as a script (`python pkg/flow.py`) was
identified as `flow` (its folder is the script's first `sys.path` entry),
and imported as `pkg.flow`: two identities, so a resume the other way
found no run of its own and started afresh, running the finished step
again. The script's name is now the file's path under a `sys.path` entry
with `__init__.py` up the chain (`scriptnames.importable`): `pkg.flow`
both ways. Where no entry holds the package's top, the name cannot be
told: a run is then never continued the other way (fail closed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable._fingerprint.scriptnames import _importable
from tests.scripts import run_each, run_in
from tests.test_runtime50_script_import import FLOW

IMPORTED = "import pkg.flow; print('value', pkg.flow.wf(5))"


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "pkg" / "flow.py").write_text(FLOW)
    return folder


def _counts(folder: Path) -> list[str]:
    return (folder / "count").read_text().split()


@pytest.mark.slow
def test_a_package_module_started_one_way_resumes_the_other(tmp_path: Path) -> None:
    script, imported = _folder(tmp_path, "script"), _folder(tmp_path, "imported")
    assert run_in(script, "pkg/flow.py", KILL="1") == ""  # killed in b
    assert run_each([(imported, IMPORTED, {"KILL": "1"})]) == [""]
    assert run_each([(script, IMPORTED, {})]) == ["value 55\n"]
    assert run_in(imported, "pkg/flow.py") == "value 55\n"
    for folder in (script, imported):
        assert _counts(folder) == ["a", "b", "b"]  # a once; b again where it was killed


def test_the_name_is_the_path_under_an_entry_through_packages(tmp_path: Path) -> None:
    top = _folder(tmp_path, "top")
    (top / "pkg" / "sub").mkdir()
    (top / "pkg" / "sub" / "__init__.py").write_text("")
    (top / "loose").mkdir()  # no __init__.py: no package of the path above it
    file, deep, loose = top / "pkg" / "flow.py", top / "pkg" / "sub" / "deep.py", top / "loose" / "flow.py"
    assert _importable(str(file), None, (str(file.parent), str(top))) == "pkg.flow"
    assert _importable(str(deep), None, (str(deep.parent), str(top))) == "pkg.sub.deep"
    # The package's top on no entry: the name an import in this process gives.
    assert _importable(str(deep), None, (str(deep.parent),)) == "deep"
    assert _importable(str(loose), None, (str(loose.parent), str(top))) == "flow"
    assert _importable(str(deep), None, (str(tmp_path),)) is None  # no entry holds it as a package's
