"""A seed set in a notebook cell (`seed(1)` of a `from random import
randint, seed`) and a step of another cell drawing with `randint`: the
notebook's module has no file, so the seeding statement went uncounted and
a fresh kernel whose cell said `seed(2)` replayed the draw made with seed 1.
Each case runs its cells in a real IPython shell, one process per kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clikit import run_cells

pytestmark = pytest.mark.slow

pytest.importorskip("IPython")

STEP = """\
@durable.step
def s(x):
    with open("count", "a") as f:
        f.write("s\\n")
    return x + randint(0, 1000)
"""

FLOW = """\
@durable.workflow(run_id="r1")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

CALL = """\
try:
    print("value", wf(10))
except durable.Suspended:
    print("suspended")
except durable.DefinitionChangedError as e:
    print("refused", e)
"""


def _cells(seed: int) -> list[str]:
    return ["import os\nimport durable\nfrom random import randint, seed", f"seed({seed})", STEP, FLOW, CALL]


@pytest.mark.parametrize(("seed", "said"), [(2, "refused"), (1, "value")])
def test_a_seed_a_notebook_cell_sets_counts(tmp_path: Path, seed: int, said: str) -> None:
    assert "suspended" in run_cells(tmp_path, _cells(1), STOP="1").stdout
    out = run_cells(tmp_path, _cells(seed)).stdout
    assert out.startswith(said), out  # seed 2 was answered `value 147`, seed 1's draw
    assert (tmp_path / "count").read_text().split() == ["s"]
