"""A class's annotation written as a string (`k: "money.Money"`, a forward
reference) names what `typing.get_type_hints` evaluates it to, which code
reading the hints then calls (a validator converting each field with its
annotated type): the class statement's reads counted `k: money.Money`, not
the string, so after an edit of `Money` a resume replayed the value
converted by its old code. Run twice in a process of its own, `money.py`
edited between the runs (refused), and not edited (replayed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow

MONEY = """
class Money:
    def __init__(self, v):
        self.v = int(v) * 7
"""

TYPED = """
import typing
import money

class Typed:
    k: "money.Money"

def coerce(cls, raw):
    hints = typing.get_type_hints(cls)
    return {k: hints[k](v) for k, v in raw.items()}
"""

READS = 'typed.coerce(typed.Typed, {"k": x})["k"].v'


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name in ("edited", "same"):
        folder = tmp_path_factory.mktemp(name)
        (folder / "flow.py").write_text(EDITED_FLOW.format(head="import typed", body=f"return {READS}"))
        (folder / "typed.py").write_text(TYPED)
        (folder / "money.py").write_text(MONEY)
        folders[name] = folder

    def between(name: str, folder: Path) -> dict[str, str]:
        if name == "edited":
            (folder / "money.py").write_text(MONEY.replace("* 7", "* 5"))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


def test_what_a_string_annotation_names_counts(runs: dict[str, Any]) -> None:
    refused_after_edit(runs["edited"])  # was `value 70` (the old output)


def test_the_same_annotations_replay(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert "value 70" in second and after == ["s"], second
