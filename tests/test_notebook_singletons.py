"""A singleton a notebook cell makes from the environment (`Cfg(K)` of a
class whose metaclass keeps its instance), read by a cached step: a
kernel started with another K computes, never is served the output of the
first kernel's K. Module files are read for the statements that make one
(`_fingerprint.singletons`); a notebook has no file, only its cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_notebook import REPO, execute
from tests.test_peer_ports_fourteenth import SINGLE

pytestmark = pytest.mark.slow  # a real kernel per run

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    "import os\nimport durable\n" + SINGLE + """
class Cfg(metaclass=Single):
    def __init__(self, k=0):
        self.k = k
""",
    "CFG = Cfg(int(os.environ['K']))",
    """\
@durable.step(cache=True)
def scaled(n):
    with open(os.environ['COUNT_FILE'], 'a') as f:
        f.write('x')
    return n * Cfg().k

print('RESULT', scaled(10))
""",
]


@pytest.fixture(autouse=True)
def _compiled(kernel_compiled: None) -> None:
    """The kernel's modules compiled once (conftest.KERNEL_PACKAGES)."""


def result(cwd: Path) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    done = execute(nb, cwd)
    text = "".join(o.get("text", "") for o in done.cells[-1].outputs if o.get("name") == "stdout")
    errors = [o for c in done.cells for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    return text.split()[-1]


def test_a_singleton_a_cell_makes_from_the_environment_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("COUNT_FILE", str(tmp_path / "count"))
    monkeypatch.setenv("K", "2")
    assert result(tmp_path) == "20"
    assert result(tmp_path) == "20"  # the same K: served from the cache
    monkeypatch.setenv("K", "3")
    assert result(tmp_path) == "30"  # not the first kernel's 20
    assert (tmp_path / "count").read_text() == "xx"
