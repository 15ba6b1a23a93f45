"""A step drawing through a name imported from a library (`from random
import randint`, `from numpy.random import rand`) while a module-level
statement seeds that library (`random.seed(1)`, `seed(1)`,
`np.random.seed(1)`), also one the step imports in its body, or that a
helper module of the user's draws from (the script seeds): the name
counted by its import statement alone, so an
edit of the seed replayed the draw made with the old one. Each case runs
twice in a process of its own: once with the seed edited between the runs
(refused), once not (replayed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, twice

pytestmark = pytest.mark.slow



# name: (the imports and the seeding statement, with SEED; the step's own import; the draw)
CASES = {
    "module": ("import random\nfrom random import randint\nrandom.seed(SEED)", "", "randint(0, 1000)"),
    "imported": ("from random import randint, seed\nseed(SEED)", "", "randint(0, 1000)"),
    "numpy": (
        "import numpy as np\nfrom numpy.random import rand\n"
        'if __name__ != "__main__":\n    np.random.seed(SEED)',
        "",
        "float(rand())",
    ),
    "in_body": ("import random\nrandom.seed(SEED)", "from random import randint", "randint(0, 1000)"),
    "numpy_in_body": ("import numpy\nnumpy.random.seed(SEED)", "import numpy as np", "float(np.random.rand())"),
    # The script seeds, a module of the user's draws.
    "helper_module": ("import random\nimport helpers\nrandom.seed(SEED)", "", "helpers.draw()"),
}

HELPERS = """
import random

def draw():
    return random.randint(0, 1000)
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name, (head, inside, draw) in CASES.items():
        for how in ("edited", "same"):
            folder = tmp_path_factory.mktemp(name)
            (folder / "flow.py").write_text(EDITED_FLOW.format(head=head.replace("SEED", "1"), body=f"{inside}\n    return x + {draw}"))
            (folder / "helpers.py").write_text(HELPERS)
            folders[f"{name}:{how}"] = folder

    def between(label: str, folder: Path) -> dict[str, str]:
        if label.endswith(":edited"):
            flow = folder / "flow.py"
            flow.write_text(flow.read_text().replace("seed(1)", "seed(2)"))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_edited_seed_of_the_library_a_step_draws_from_is_never_replayed(
    runs: dict[str, Any], name: str
) -> None:
    first, count, second, after = runs[f"{name}:edited"]
    assert "suspended" in first and count == ["s"], first
    assert "refused" in second and ("state changed" in second or "helpers.draw changed" in second), second  # was `value 147`
    assert after == ["s"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_seed_replays(runs: dict[str, Any], name: str) -> None:
    first, count, second, after = runs[f"{name}:same"]
    assert "suspended" in first and count == ["s"], first
    assert "value" in second and after == ["s"], second
