"""Figures taken in alternating blocks, for `overhead.py`.

On a shared machine the cost of an `fdatasync` moves by ten times within a
minute, so a floor measured once and durable measured a minute later gave
ratios from 0.5x to 9.7x between two runs of the same code. `overhead.py`
therefore takes every figure in k blocks, alternating (floors, durable,
floors, durable, ...), prints each figure's median with its least and most,
and computes each ratio block by block: the median of the k ratios of two
figures taken seconds apart, which a change in the machine between blocks
moves far less than a ratio of medians."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def ratios(tops: Sequence[float], bottoms: Sequence[float]) -> list[float]:
    """tops[i] / bottoms[i]: each pair measured in the same block."""
    if len(tops) != len(bottoms) or not tops:
        raise ValueError(f"{len(tops)} figures against {len(bottoms)}: not paired blocks")
    return [top / bottom for top, bottom in zip(tops, bottoms, strict=True)]


def ratio(tops: Sequence[float], bottoms: Sequence[float]) -> float:
    """The median of the per-block ratios."""
    return statistics.median(ratios(tops, bottoms))


def number(x: float) -> str:
    """Three significant figures or more, without an exponent."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def spread(values: Sequence[float], scale: float = 1.0) -> str:
    """'least-most' of the blocks, scaled (e.g. by 1e6 for microseconds)."""
    return f"{number(min(values) * scale)}-{number(max(values) * scale)}"


def figure(values: Sequence[float], scale: float = 1.0) -> str:
    """'median [least-most]'."""
    return f"{number(statistics.median(values) * scale)} [{spread(values, scale)}]"


def times(tops: Sequence[float], bottoms: Sequence[float]) -> str:
    """'1.73x [1.61-1.90]': the median per-block ratio and its spread."""
    each = ratios(tops, bottoms)
    return f"{statistics.median(each):.2f}x [{min(each):.2f}-{max(each):.2f}]"
