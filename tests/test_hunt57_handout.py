"""A try handed to another process's worker starts only before the time
the run's lease is surely held until (`_fanout.handout`); a worker whose
clock runs ahead hands tries back early, which is refused after a few
rather than handing them back and forth for ever."""

from __future__ import annotations

import math
import time

import pytest

from durable._fanout.handout import HandedBack, NotStarted, lapsed
from durable.errors import ConfigurationError


def test_a_try_starts_only_before_its_time() -> None:
    now = time.time()
    assert lapsed(None, here=True) is None  # a local folder's lease: no time limit
    assert lapsed((now + 60, math.inf), here=True) is None
    assert lapsed((now - 1, math.inf), here=False) == now - 1
    assert lapsed((now + 60, 0.0), here=True) == 0.0  # the elapsed clock, on this host
    assert lapsed((now + 60, 0.0), here=False) is None  # not on another's
    HandedBack().again(NotStarted(0.0))  # ended by the elapsed clock: no worker's clock to blame


def test_tries_handed_back_early_are_refused_after_a_few() -> None:
    back = HandedBack()
    for _ in range(5):
        back.again(NotStarted(time.time() - 1))  # over here too: handed out again
    back.again(NotStarted(time.time() + 30))
    back.again(NotStarted(time.time() + 30))
    with pytest.raises(ConfigurationError, match="clock runs ahead"):
        back.again(NotStarted(time.time() + 30))
