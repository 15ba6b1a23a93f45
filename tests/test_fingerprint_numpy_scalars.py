"""A numpy scalar a step reads (a global, a closure cell, a default) counts
by its value, as the Python number it stands for does: `K =
np.float64(os.environ["K"])` read by a step is a changed step when K
changes, not a replay of the output computed with the old K."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import counted, edited_env, run_in, suspending

np = pytest.importorskip("numpy")


def made(k: Any) -> Any:
    @durable.step(name="scaled")
    def scaled(x: float) -> float:
        return float(x * k)

    return scaled


def test_a_closure_cell_counts_by_value() -> None:
    assert made(np.float64(2)).fingerprint != made(np.float64(3)).fingerprint
    assert made(np.float64(2)).fingerprint == made(np.float64(2)).fingerprint
    assert made(np.float32(2)).fingerprint != made(np.float64(2)).fingerprint  # another dtype
    assert made(np.int64(2)).fingerprint != made(2).fingerprint


SCRIPT = """
import os
import durable
import numpy as np

K = np.float64(os.environ["K"])
""" + counted("scale", "float(x * K)") + suspending("scale(x)")


@pytest.mark.slow
def test_a_global_read_from_the_environment_counts_by_value(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(SCRIPT)
    out = edited_env(tmp_path)
    assert "DefinitionChangedError" in out and "value 20.0" not in out  # was: value 20.0
    assert "value 30.0" in run_in(tmp_path, "flow.py", K="3", DURABLE_ON_CHANGE="rerun")
    assert (tmp_path / "count").read_text().split() == ["scale", "scale"]
