"""`%autoreload 2` in a real ipykernel driven by nbclient. IPython 9's
autoreload patches a function whose body alone changed with code compiled
from that `def` on its own (its deduperreload): the code starts on line 1
(2 for a method), not where the file has it, yet the file's text is what
runs. Such a patch must neither be refused as an edit without a reload nor
be served what the old body returned."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_notebook import execute

pytestmark = pytest.mark.slow  # a real kernel

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("IPython.extensions.deduperreload")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _compiled(kernel_compiled: None) -> None:
    """The kernel's modules compiled once (conftest.KERNEL_PACKAGES)."""


HELPERS = """\
N = 1

def scale(x):
    return x * 2

class Model:
    def predict(self, x):
        return x + 1
"""

PRIVATE = """\
N = 1

class Private:
    def __init__(self):
        self.__x = 5

    def get(self):
        try:
            return self.__x
        except AttributeError:
            return 0
"""

SETUP = f"""\
%load_ext autoreload
%autoreload 2
import os, durable
open("hf.py", "w").write({HELPERS!r})
open("hp.py", "w").write({PRIVATE!r})
import hf, hp

def bump(name):
    with open(os.path.join(os.environ["FP_COUNTS"], name), "a") as f:
        f.write("x")

@durable.step(cache=True)
def cached(x):
    bump("cached")
    return hf.scale(x)

@durable.step
def predicted(x):
    bump("predicted")
    return hf.Model().predict(x)

@durable.workflow(run_id="w", on_change="rerun")
def flow(x):
    return predicted(x)

@durable.step(cache=True)
def private(x):
    bump("private")
    return hp.Private().get() + x

print("A", cached(3), flow(3), private(3))
"""


def edit(old: str, new: str, module: str = "hf.py") -> str:
    # A later mtime without a sleep: autoreload compares modification times.
    return f"""\
text = open({module!r}).read().replace({old!r}, {new!r})
open({module!r}, "w").write(text)
when = os.stat({module!r}).st_mtime + 5
os.utime({module!r}, (when, when))
"""


CELLS = [
    SETUP,
    edit("x * 2", "x * 2 + 1000") + edit("x + 1", "x + 5000") + edit("return 0", "return -1", "hp.py"),
    'print("B", cached(3), flow(3), hf.scale.__code__.co_firstlineno)',
    # Its `self.__x` compiled in `class __autoreload_class__` reads another
    # attribute than the text's (2, where a fresh kernel's code gives 8): never stored.
    'print("P", private(3), private(3))',
    "%autoreload 0\n" + edit("x + 5000", "x + 7000"),  # edited, not reloaded
    'print("C", flow(3))',
]


def test_a_function_autoreload_patched_alone_is_its_files_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "counts").mkdir()
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FP_COUNTS", str(tmp_path / "counts"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    execute(nb, tmp_path)
    out = ["".join(o.get("text", "") or o.get("ename", "")) for c in nb.cells for o in c.outputs]
    said = "\n".join(out)
    assert "A 6 4 8" in said, said
    # Run again with the patched code (line 1: compiled on its own), not refused.
    assert "B 1006 5003 1" in said, said
    assert "no longer matches" not in said.split("B 1006")[1].split("P 2 2")[0], said
    assert "P 2 2" in said, said
    counts = {p.name: len(p.read_text()) for p in (tmp_path / "counts").iterdir()}
    assert counts == {"cached": 2, "predicted": 2, "private": 3}, said
    # Edited without a reload: still refused, nothing run.
    assert out[-1] == "ConfigurationError", said
