"""An immutable value of the standard library that a step reads (a global,
a closure cell, a default) counts by its value, as a number or a string
does: `DATA = Path(os.environ["DATA"])`, `RATE = Decimal(...)`, a date or a
UUID read from the environment or a config file are changed steps when
they change, not replays of the output computed with the old value."""

from __future__ import annotations

import datetime
import decimal
import fractions
import pathlib
import uuid
import zoneinfo
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import counted, edited_env, refused_then_replayed, run_in, suspending


def made(k: Any) -> Any:
    @durable.step(name="uses")
    def uses(x: str) -> str:
        return f"{x} {k}"

    return uses


PAIRS = [
    (decimal.Decimal("2"), decimal.Decimal("3")),
    (decimal.Decimal("2.0"), decimal.Decimal("2.00")),  # equal, not the same value
    (pathlib.PurePosixPath("a"), pathlib.PureWindowsPath("a")),  # by type, as before
    (datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)),
    (datetime.datetime(2024, 1, 1, 9), datetime.datetime(2024, 1, 1, 10)),
    (
        datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),
        datetime.datetime(2024, 1, 1, tzinfo=zoneinfo.ZoneInfo("UTC")),
    ),
    (datetime.time(9), datetime.time(9, fold=1)),
    (datetime.timedelta(days=1), datetime.timedelta(days=2)),
    (uuid.UUID(int=1), uuid.UUID(int=2)),
    (fractions.Fraction(1, 2), fractions.Fraction(1, 3)),
]


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=[type(a).__name__ for a, _ in PAIRS])
def test_a_closure_cell_counts_by_value(a: Any, b: Any) -> None:
    assert made(a).fingerprint != made(b).fingerprint
    assert made(a).fingerprint == made(a).fingerprint


def test_a_path_in_a_closure_or_a_default_counts_by_its_type() -> None:
    # Where a file lies (`root=HERE / "data"`, made from `__file__`): never by
    # value there, or a moved script would refuse its runs. A path a factory
    # made from the environment counts by value through its statement's reads.
    assert made(pathlib.Path("data/a")).fingerprint == made(pathlib.Path("data/b")).fingerprint


SCRIPT = """
import decimal, os, pathlib
import durable

RATE = decimal.Decimal(os.environ["K"])
DATA = pathlib.Path(os.environ["K"])
""" + counted("scale", "str(READ)") + suspending("scale(x)")


@pytest.mark.slow
@pytest.mark.parametrize(("read", "old", "new"), [("x * RATE", "20", "30"), ("DATA", "2", "3")])
def test_globals_read_from_the_environment_count_by_value(
    tmp_path: Path, read: str, old: str, new: str
) -> None:
    (tmp_path / "flow.py").write_text(SCRIPT.replace("READ", read))
    out = edited_env(tmp_path)
    assert "DefinitionChangedError" in out and f"value {old}" not in out  # was: value 20 (2)
    assert f"value {new}" in run_in(tmp_path, "flow.py", K="3", DURABLE_ON_CHANGE="rerun")
    assert (tmp_path / "count").read_text().split() == ["scale", "scale"]


MOVED = """
import os, pathlib
import durable

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data"
FILES = (HERE / "a.csv", DATA / "b.csv")  # a tuple of them too

def label(x, root=HERE / "data"):  # a helper's default: where the file lies too
    return f"{x} {root.name}"

""" + counted("where", 'label(x, DATA) + "".join(p.suffix for p in FILES)') + suspending(
    "where(x)", given="1"
)


@pytest.mark.slow
def test_a_path_made_from_the_script_s_own_file_still_counts_by_its_statement(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    (first / "flow.py").write_text(MOVED)
    store = str(tmp_path / "store")
    count = str(tmp_path / "count")
    out = run_in(first, "flow.py", STOP="1", DURABLE_STORE=store, COUNT_FILE=count)
    assert "suspended" in out
    first.rename(second)  # the same script, in another folder
    out = run_in(second, "flow.py", DURABLE_STORE=store, COUNT_FILE=count)
    assert "value 1 data.csv.csv" in out
    assert (tmp_path / "count").read_text().split() == ["where"]


FROM_ENV = """
import os, re, typing
import durable

class Cfg(typing.NamedTuple):
    lr: float

CFG = Cfg(lr=float(os.environ["K"]))
SIZES = range(int(os.environ["K"]))
PATTERN = re.compile("a{%s}" % os.environ["K"])

@durable.step
def uses():
    return READ
""" + suspending("uses()", "", "")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("read", "old"), [("CFG.lr", "2.0"), ("len(SIZES)", "2"), ("PATTERN.pattern", "a{2}")]
)
def test_an_object_made_from_the_environment_without_attributes_counts_by_content(
    tmp_path: Path, read: str, old: str
) -> None:
    (tmp_path / "flow.py").write_text(FROM_ENV.replace("READ", read))
    out = edited_env(tmp_path)
    assert "DefinitionChangedError" in out and f"value {old}" not in out


LOOPED = """
import os, typing
import durable

class Row(typing.NamedTuple):
    a: int

@durable.step(cache=True)
def use(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("use\\n")
    return x * ROW.a

for ROW in (Row(1), Row(2), Row(3)):
    print(use(10))
"""


@pytest.mark.slow
def test_a_named_tuple_a_module_level_loop_binds_counts_by_content(tmp_path: Path) -> None:
    (tmp_path / "rows.py").write_text(LOOPED)
    assert run_in(tmp_path, "rows.py").split() == ["10", "20", "30"]  # was: 10 10 10
    assert run_in(tmp_path, "rows.py").split() == ["10", "20", "30"]  # from the cache
    assert (tmp_path / "count").read_text().split() == ["use"] * 3


FACTORY = """
import os, typing
import durable

class Cfg(typing.NamedTuple):
    lr: float

def make(cfg):
    @durable.step
    def scale(x):
        return x * cfg[0]
    return scale

scale = make(HELD)
""" + suspending("scale(x)")


@pytest.mark.slow
@pytest.mark.parametrize(
    "held", ['[float(os.environ["K"])]', 'Cfg(lr=float(os.environ["K"]))', '{0: float(os.environ["K"])}']
)
def test_what_a_factory_made_from_the_environment_holds_counts_by_content(
    tmp_path: Path, held: str
) -> None:
    (tmp_path / "flow.py").write_text(FACTORY.replace("HELD", held))
    refused_then_replayed(tmp_path, "20.0")


CLASS_ATTR = """
import os
import durable

class Model:
    LR = float(os.environ["K"])

    def predict(self, x):
        return x * self.LR

MODEL = Model()

@durable.step
def by_global(x):
    return MODEL.predict(x)

@durable.step
def by_argument(model, x):
    return model.predict(x)
""" + suspending("CALL")


@pytest.mark.slow
@pytest.mark.parametrize("call", ["by_global(x)", "by_argument(Model(), x)"])
def test_a_class_constant_read_from_the_environment_counts_by_value(
    tmp_path: Path, call: str
) -> None:
    (tmp_path / "flow.py").write_text(CLASS_ATTR.replace("CALL", call))
    refused_then_replayed(tmp_path, "20.0")
