"""A pandas frame or series, or a config parser, a module loads from a
file (`DF = pd.read_csv(path)`, `CP.read(path)`) counts by its contents, as a numpy array or a dict
loaded so does: the statement's text is the same whatever the file holds.
Each script runs in a process of its own, twice per file: the second all
hits."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .test_cache_memo import first_line_of

pytest.importorskip("pandas")
pytestmark = pytest.mark.slow  # four Python processes

_SCRIPT = """
import os
import pandas as pd
import durable
ran = []
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "d.csv")
DF = pd.read_csv(DATA)
PRICES = pd.read_csv(DATA)["b"]


@durable.step(cache=True)
def total(v):
    ran.append(v)
    return v * int(DF["a"].sum())


@durable.step(cache=True)
def price(v):
    ran.append(v)
    return v * int(PRICES.sum())


print(total(1), price(1), len(ran))
"""


def test_a_frame_read_from_a_file_counts_by_its_contents(tmp_path: Path) -> None:
    """Seen failing: "2 3 0" after the file changed (the old outputs)."""
    script = tmp_path / "frame_script.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    store = tmp_path / "store"
    (tmp_path / "d.csv").write_text("a,b\n1,2\n1,1\n")
    runs = [first_line_of(script, store) for _ in range(2)]
    assert runs == ["2 3 2", "2 3 0"]
    (tmp_path / "d.csv").write_text("a,b\n1,2\n6,4\n")
    runs = [first_line_of(script, store) for _ in range(2)]
    assert runs == ["7 6 2", "7 6 0"]


_PARSER = """
import configparser, os
import durable
ran = []
CP = configparser.ConfigParser()
CP.read(os.path.join(os.path.dirname(os.path.abspath(__file__)), "c.ini"))


@durable.step(cache=True)
def total(v):
    ran.append(v)
    return v * int(CP["s"]["rate"])


print(total(10), len(ran))
"""


def test_a_config_parser_read_from_a_file_counts_by_its_contents(tmp_path: Path) -> None:
    """`CP.read(path)`: a mapping of sections filled from a file. Seen
    failing: "20 0" after the file said 5."""
    script = tmp_path / "parser_script.py"
    script.write_text(textwrap.dedent(_PARSER))
    store = tmp_path / "store"
    (tmp_path / "c.ini").write_text("[s]\nrate = 2\n")
    assert [first_line_of(script, store) for _ in range(2)] == ["20 1", "20 0"]
    (tmp_path / "c.ini").write_text("[s]\nrate = 5\n")
    assert [first_line_of(script, store) for _ in range(2)] == ["50 1", "50 0"]


_CHANGED = """
import os
import pandas as pd
import durable
ran = []
DF = pd.read_csv(os.path.join(os.path.dirname(os.path.abspath(__file__)), "d.csv"))
DF["c"] = DF["a"] * 2


@durable.step(cache=True)
def total(v):
    ran.append(v)
    return v * int(DF["c"].sum())


print(total(10), len(ran))
"""


def test_a_loaded_frame_its_module_changes_in_place_counts_by_its_rows(tmp_path: Path) -> None:
    """`DF["c"] = ...` after loading: counted as a global its statements
    change in place, by its rows. Seen failing: "20 0" after the file
    changed (its attributes, none, were what counted)."""
    script = tmp_path / "changed_script.py"
    script.write_text(textwrap.dedent(_CHANGED))
    store = tmp_path / "store"
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    assert [first_line_of(script, store) for _ in range(2)] == ["20 1", "20 0"]
    (tmp_path / "d.csv").write_text("a,b\n4,2\n")
    assert [first_line_of(script, store) for _ in range(2)] == ["80 1", "80 0"]
