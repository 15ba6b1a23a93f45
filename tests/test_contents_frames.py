"""A pandas frame or series a module loads from a file (`DF =
pd.read_csv(path)`) counts by its contents, as a numpy array or a dict
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
