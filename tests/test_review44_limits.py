"""Limits of the fingerprint's walks that let an edit through, each case
run twice in a process of its own, the helper edited between the runs
(refused) or not (replayed). A module whose file does work at import (`train.py` training at top
level), named by a string (`import_module("train")`), counts by its text and
by those of the modules of yours it imports, never imported for it
(`modfiles.works_at_import`). Two of its limits let an edit through: a
module of a megabyte or more (a generated table) was counted by nothing,
and past the 128th module it imports the rest were not counted at all; an
edit of either replayed the old output. A step that looks modules up by
the strings of a global's data (`import_module(MODS[k])`) read at most 200
of its items: past them, a plugin's edit replayed too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint import lookups, modfiles
from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

HEAD = "import importlib"
BODY = 'return importlib.import_module("train").run(x)'
TRAIN = "import helpers\n\ndef run(x):\n    return helpers.f(x)\n\nprint('trained')\n"
HELPER = "def f(x):\n    return x * 7\n"
WIDE = 140  # modules train.py imports besides its helper: past the 128 the walk stopped at


# 300 entries, the step's among the first: past the 200 items looked at.
MODS = "MODS = {" + ", ".join(f'"k{i}": "plug{i}"' for i in range(300)) + "}"


def _place(folder: Path, name: str) -> None:
    (folder / "flow.py").write_text(EDITED_FLOW.format(head=HEAD, body=BODY))
    if name in ("many", "same_many"):
        body = 'return importlib.import_module(MODS["k0"]).run(x)'
        (folder / "flow.py").write_text(EDITED_FLOW.format(head=f"{HEAD}\n{MODS}", body=body))
        (folder / "plug0.py").write_text(HELPER.replace("def f", "def run"))
        return
    if name == "wide":  # the helper, imported first, is the last one the walk reaches
        imports = "".join(f"import m{i}\n" for i in range(WIDE))
        (folder / "train.py").write_text(TRAIN.replace("import helpers\n", "import helpers\n" + imports))
        for i in range(WIDE):
            (folder / f"m{i}.py").write_text(HELPER)
        (folder / "helpers.py").write_text(HELPER)
    else:
        (folder / "train.py").write_text(TRAIN)
        table = f"TABLE = {'7' * (1 << 20)!r}\n" if name == "large" else ""
        (folder / "helpers.py").write_text(HELPER + table)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name in ("large", "wide", "many", "same", "same_many"):
        folders[name] = folder = tmp_path_factory.mktemp(name)
        _place(folder, name)

    def between(name: str, folder: Path) -> dict[str, str]:
        if not name.startswith("same"):
            path = folder / ("plug0.py" if name == "many" else "helpers.py")
            path.write_text(path.read_text().replace("x * 7", "x * 5"))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


@pytest.mark.slow
@pytest.mark.parametrize("case", ["large", "wide", "many"])
def test_an_edited_helper_past_a_walks_limit_is_refused(runs: dict[str, Any], case: str) -> None:
    refused_after_edit(runs[case])


@pytest.mark.slow
@pytest.mark.parametrize("case", ["same", "same_many"])
def test_the_same_files_replay(runs: dict[str, Any], case: str) -> None:
    first, count, second, after = runs[case]
    assert "suspended" in first and "value 70" in second and count == after == ["s"]


def test_past_the_modules_walked_it_counts_as_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its limit the walk gives a token of this process alone: a resume
    elsewhere is refused rather than an edit of the rest let through."""
    for i in range(3):
        (tmp_path / f"w44m{i}.py").write_text(f"import w44m{i + 1}\n" if i < 2 else HELPER)
    (tmp_path / "w44train.py").write_text("import w44m0\nprint('trained')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    whole = modfiles.works_at_import("w44train")
    assert whole is not None and whole != modfiles.UNTOLD
    monkeypatch.setattr(modfiles, "_WALKED", 2)
    assert modfiles.works_at_import("w44train") == modfiles.UNTOLD


def test_data_past_the_items_looked_at_counts_as_changed() -> None:
    assert lookups.data_strings(["a.b"] * 2, budget=3) == ("a.b",) * 2
    assert lookups.data_strings(["a.b"] * 3, budget=3) == ("a.b",) * 2 + (modfiles.UNTOLD,)
