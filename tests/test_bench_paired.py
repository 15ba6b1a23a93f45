"""benchmarks/overhead.py's ratios come from paired blocks (benchmarks/paired.py):
a disk whose fdatasync cost moves by ten times between blocks must not move
the ratio of two figures measured in the same block."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest


def _paired() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "paired.py"
    spec = importlib.util.spec_from_file_location("bench_paired", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_ratio_is_the_median_of_per_block_ratios_not_a_ratio_of_medians() -> None:
    paired = _paired()
    # The floor swings 200 -> 3,000 us between blocks; durable costs 1.5x it in each block,
    # except one block disturbed by a neighbour (2.5x).
    floor = [200e-6, 3000e-6, 250e-6, 2800e-6, 220e-6]
    ours = [300e-6, 4500e-6, 375e-6, 7000e-6, 330e-6]
    assert paired.ratio(ours, floor) == pytest.approx(1.5)
    # What a floor measured once, then durable a block later, would have said: 22.5x.
    assert ours[1] / floor[0] == pytest.approx(22.5)
    assert paired.times(ours, floor) == "1.50x [1.50-2.50]"


def test_a_figure_prints_its_median_and_the_least_and_most_of_its_blocks() -> None:
    paired = _paired()
    assert paired.figure([3056.7e-6, 1182.0e-6, 2898.3e-6], 1e6) == "2,898 [1,182-3,057]"
    assert paired.figure([0.104e-6, 0.1e-6, 0.25e-6], 1e6) == "0.10 [0.10-0.25]"
    assert paired.figure([16.44e-6, 17.0e-6], 1e6) == "16.7 [16.4-17.0]"


def test_blocks_that_do_not_pair_are_refused() -> None:
    paired = _paired()
    with pytest.raises(ValueError, match="not paired"):
        paired.ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="not paired"):
        paired.ratio([], [])
