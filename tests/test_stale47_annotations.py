"""A helper's parameter annotations read by a validator: `def convert(v:
money.Money)` decorated by (or handed to) code that reads its hints
(`typing.get_type_hints(fn)`, `inspect.signature(fn)`) and calls each
argument's annotated class (`Money(v)`), as pydantic's `validate_call`
does. The annotation is evaluated around the function, not in it: counted
by its code alone, an edit of `Money` replayed the value converted by its
old code. Each case runs twice in a process of its own, `money.py` edited
between the runs (refused); a step doing them all, not edited, replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow

MONEY = """
import pydantic

class Money:
    def __init__(self, v):
        self.v = int(v) * 7

class Priced(pydantic.BaseModel):
    v: int

    @pydantic.field_validator("v")
    @classmethod
    def scaled(cls, v):
        return v * 7
"""

VALIDATE = """
import functools, inspect, typing

def validate_call(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        hints = typing.get_type_hints(fn)
        bound = inspect.signature(fn).bind(*args)
        return fn(**{k: hints[k](v) for k, v in bound.arguments.items()})
    return wrapper

def validate(fn, *args):
    params = inspect.signature(fn).parameters
    return fn(*(p.annotation(v) for p, v in zip(params.values(), args)))
"""

TYPED = """
import pydantic
import money
from money import Money
from validate import validate, validate_call

@validate_call
def convert(v: money.Money):
    return v.v

@validate_call
def imported(v: Money):
    return v.v

@validate_call
def quoted(v: "money.Money"):
    return v.v

def handed(v: money.Money):
    return v.v

@pydantic.validate_call
def priced(p: money.Priced):
    return p.v
"""

# name: what the step returns.
CASES = {
    "decorated": "typed.convert(x)",
    "imported_name": "typed.imported(x)",
    "string_annotation": "typed.quoted(x)",
    "handed_to_a_validator": "validate(typed.handed, x)",
    "pydantic_validate_call": 'typed.priced({"v": x})',
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    head = "import typed\nfrom validate import validate"
    bodies = {name: f"return {reads}" for name, reads in CASES.items()}
    bodies["same"] = f"return [{', '.join(CASES.values())}]"
    folders = {}
    for name, body in bodies.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / "flow.py").write_text(EDITED_FLOW.format(head=head, body=body))
        (folder / "money.py").write_text(MONEY)
        (folder / "validate.py").write_text(VALIDATE)
        (folder / "typed.py").write_text(TYPED)
        folders[name] = folder

    def between(name: str, folder: Path) -> dict[str, str]:
        if name != "same":
            (folder / "money.py").write_text(MONEY.replace("* 7", "* 5"))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_edited_annotation_class_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[name])  # was `value 70` (the old output)


def test_the_same_annotations_replay(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert f"value {[70] * len(CASES)}" in second and after == ["s"], second
