"""A global that a module-level loop binds anew on each pass (`for cfg in
configs:`, `model = Model(lr)` in its body) counts by what it holds when
the step runs, not by the loop's text alone, which is the same on every
pass: a cached step reading it was served the first pass's output. Each
script runs in a process of its own, then a second time: every call a hit."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .test_cache_memo import first_line_of

pytestmark = pytest.mark.slow  # two Python processes per test

_LOOP = """
import numpy as np
import durable
ran = []


class Model:
    def __init__(self, lr):
        self.lr = lr


@durable.step(cache=True)
def by_target(v):
    ran.append(v)
    return v * cfg["lr"]


@durable.step(cache=True)
def by_object(v):
    ran.append(v)
    return v * model.lr


@durable.step(cache=True)
def by_array(v):
    ran.append(v)
    return float((weights * v).sum())


for cfg in ({"lr": 2}, {"lr": 3}):
    model = Model(cfg["lr"])
    weights = np.full(2, float(cfg["lr"]))
    print(by_target(10), by_object(10), by_array(10), end=" ")
print(len(ran))
"""


def test_a_global_a_loop_binds_on_each_pass_is_not_served_stale(tmp_path: Path) -> None:
    """Seen failing: 20 20 40.0 20 20 40.0 3."""
    pytest.importorskip("numpy")
    script = tmp_path / "loop_script.py"
    script.write_text(textwrap.dedent(_LOOP))
    runs = [first_line_of(script, tmp_path / "store") for _ in range(2)]
    assert runs == ["20 20 40.0 30 30 60.0 6", "20 20 40.0 30 30 60.0 0"]
