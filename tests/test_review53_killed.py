"""Deaths inside a child run are the child's to count: a parent workflow
whose child's steps each kill the process the first time they run gets
further in the child on every attempt, though the parent has no record
more. hunt50's count (`killed.count_killed`) saw the parent at the same
place three times and failed the run with RunKilledError, the child's
next step never tried. The child's own count still bounds deaths that
make no progress (tests/test_hunt50_killed_step.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each
from tests.test_hunt52_killed import FLOW as HUNT52_FLOW

pytestmark = pytest.mark.slow

# hunt52's flow (each of the child's steps kills the process the first time), the child under its
# derived id in its parent's store.
FLOW = HUNT52_FLOW.replace("{OPTIONS}", "{}")


def test_deaths_where_a_child_run_got_further_do_not_fail_its_parent(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    outs = run_each([(tmp_path, "import flow", {})] * 5)
    assert outs == ["", "", "", "", "value 6\n"], outs  # the fourth was RunKilledError at position 0
    assert (tmp_path / "count").read_text().split() == ["0", "0", "1", "1", "2", "2", "3", "3"]
