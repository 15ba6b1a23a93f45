"""Notebooks, in a real ipykernel driven by nbclient: a kernel that dies in
the middle of a workflow, a fresh kernel that finishes it by replaying the
finished steps, a cosmetic edit that still resumes, and a semantic edit that
is refused with the step named.

IPython gives every cell a new file name on every kernel, so these also
prove that file names never enter a fingerprint."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # a real kernel: seconds, the same on every Python

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _compiled(kernel_compiled: None) -> None:
    """The kernel's modules compiled once (conftest.KERNEL_PACKAGES)."""


SETUP = """\
import os
import durable

COUNTS = os.environ["FP_COUNTS"]

def bump(name):
    with open(os.path.join(COUNTS, name), "a") as f:
        f.write("x")
"""

STEPS = """\
@durable.step
def load(n):
    bump("load")
    return list(range(n))

@durable.step(retries=2)
def square(xs):
    bump("square")
    return [x * x for x in xs]

@durable.step
def total(xs):
    bump("total")
    if os.path.exists(os.environ["FP_DIE"]):
        os.remove(os.environ["FP_DIE"])
        os._exit(1)  # the kernel process dies here, mid-workflow
    return sum(xs)
"""

# Same code: comments, blank lines, a docstring, wrapping, other retries.
STEPS_COSMETIC = """\
# Steps of the pipeline (reformatted)
@durable.step
def load(n):
    '''Numbers below n.'''
    bump('load')


    return list(range(n))  # a comment


@durable.step(retries=5)
def square(xs):
    bump("square")
    return [
        x * x
        for x in xs
    ]

@durable.step
def total(xs):
    bump("total")
    if os.path.exists(os.environ["FP_DIE"]):
        os.remove(os.environ["FP_DIE"])
        os._exit(1)
    return sum(xs)
"""

STEPS_SEMANTIC = STEPS.replace("x * x", "x * x * x")

WORKFLOW = """\
@durable.workflow
def pipeline(n):
    return total(square(load(n)))

run = pipeline.with_options(run_id=os.environ["FP_RUN"]).run(4)
print("RESULT", run.value, run.steps_replayed, run.steps_executed)
"""


def notebook(steps: str, extra_cell: bool = False) -> Any:
    cells = [SETUP, steps, WORKFLOW]
    if extra_cell:  # shifts every later cell: other execution counts, other file names
        cells.insert(1, "x = 1  # a new cell above the steps")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


class _SocketFiles(nbclient.NotebookClient):  # type: ignore[misc,name-defined]
    """A client whose kernel talks over socket files in a folder of its own
    (ZMQ's ipc transport), not TCP ports: jupyter_client picks ports free
    now and the kernel binds them a second later, and under a loaded suite
    another process (a moto server, another kernel) had taken one meanwhile:
    "Kernel died before replying to kernel_info" (Address already in use)."""

    folder = ""

    def create_kernel_manager(self) -> Any:
        km = super().create_kernel_manager()
        km.transport, km.ip = "ipc", os.path.join(self.folder, "k")
        return km


def execute(nb: Any, cwd: Path) -> Any:
    # A short folder: a socket file's path holds at most 104-108 bytes.
    with tempfile.TemporaryDirectory(prefix="nb", dir=None if os.name == "nt" else "/tmp") as folder:
        # A cell's output reaches nbclient after its reply; on a loaded machine it
        # came past the 4 s nbclient waits by default, and was dropped silently.
        client = (nbclient.NotebookClient if os.name == "nt" else _SocketFiles)(
            nb,
            timeout=120,
            iopub_timeout=120,
            raise_on_iopub_timeout=True,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(cwd)}},
        )
        client.folder = folder
        client.execute()
    return nb


def result_line(nb: Any) -> list[str]:
    for out in nb.cells[-1].outputs:
        if out.get("name") == "stdout" and "RESULT" in out["text"]:
            return str(out["text"]).split()[1:]
    raise AssertionError(f"no result: {nb.cells[-1].outputs}")


def counts(root: Path) -> dict[str, int]:
    return {p.name: len(p.read_text()) for p in sorted((root / "counts").iterdir())}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Kernels inherit the environment: this checkout, a store, counters."""
    (tmp_path / "counts").mkdir()
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FP_COUNTS", str(tmp_path / "counts"))
    monkeypatch.setenv("FP_DIE", str(tmp_path / "die"))
    return tmp_path


def crash(nb: Any, root: Path) -> None:
    (root / "die").touch()
    with pytest.raises(nbclient.exceptions.DeadKernelError):
        execute(nb, root)
    assert not (root / "die").exists()  # it died where we meant it to


@pytest.mark.slow
def test_kernel_dies_mid_workflow_and_a_fresh_kernel_replays(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FP_RUN", "first")
    crash(notebook(STEPS), env)
    assert counts(env) == {"load": 1, "square": 1, "total": 1}

    finished = execute(notebook(STEPS), env)
    assert result_line(finished) == ["14", "2", "1"]  # 0+1+4+9; two replayed, one executed
    assert counts(env) == {"load": 1, "square": 1, "total": 2}


@pytest.mark.slow
def test_cosmetic_edit_resumes_and_semantic_edit_is_refused(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FP_RUN", "second")
    crash(notebook(STEPS), env)
    assert counts(env) == {"load": 1, "square": 1, "total": 1}

    resumed = execute(notebook(STEPS_COSMETIC, extra_cell=True), env)
    assert result_line(resumed) == ["14", "2", "1"]
    assert counts(env) == {"load": 1, "square": 1, "total": 2}

    refused = execute(notebook(STEPS_SEMANTIC), env)
    errors = [o for o in refused.cells[-1].outputs if o["output_type"] == "error"]
    assert [e["ename"] for e in errors] == ["DefinitionChangedError"]
    message = errors[0]["evalue"]
    assert re.search(r"- square: code changed: [0-9a-f]{12} -> [0-9a-f]{12}", message), message
    assert "load" not in message and "total:" not in message
    assert counts(env) == {"load": 1, "square": 1, "total": 2}  # nothing ran


NO_DELAY = """\
from durable._fanout import progress

progress.DELAY = 0  # draw from the first item: the cell is short
"""

PROGRESS = """\
def double(x):
    bump("double")
    return 2 * x

@durable.workflow
def fan(n):
    return durable.loop_over(double, range(n), name="doubling")

print("RESULT", sum(fan(12)))
"""


@pytest.mark.slow
def test_a_notebook_shows_the_tqdm_bar(env: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (SETUP, NO_DELAY, PROGRESS)]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    outputs = execute(nb, env).cells[-1].outputs
    assert result_line(nb) == ["132"]
    widgets = [
        o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    texts = [str(o["data"].get("text/plain", "")) for o in widgets]
    assert any("doubling" in t and "/12" in t for t in texts), outputs  # displayed at once
    # The widgets' final state, as nbclient keeps it: the bar went to 12 of 12.
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    models = [m["state"] for m in state.values()]
    bars = [(m["value"], m["max"]) for m in models if m["_model_name"] == "FloatProgressModel"]
    assert (12.0, 12.0) in bars
    labels = [str(m["value"]) for m in models if m["_model_name"] == "HTMLModel"]
    assert any(label.startswith("doubling") for label in labels)
    assert any("12/12" in label for label in labels)
    assert counts(env) == {"double": 12}


FILLS = """\
RESULTS = {}

@durable.step
def fetch(u):
    bump("fetch")
    RESULTS[u] = u * 2
    return u * 2

@durable.workflow(run_id="shown")
def pipe(u):
    return fetch(u)
"""


@pytest.mark.slow
def test_a_cell_that_prints_what_a_step_filled_changes_nothing(env: Path) -> None:
    """`print(RESULTS)` and `display(RESULTS)` in a cell of their own only
    show the global: the workflow's cell run again replays, it is not
    refused as if the step's code had changed."""
    run_again = 'out = pipe(3)\nprint("RESULT", out)'
    cells = [SETUP, FILLS, run_again, "print(RESULTS, out)\ndisplay(RESULTS)", run_again]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    execute(nb, env)
    errors = [o for o in nb.cells[-1].outputs if o["output_type"] == "error"]
    assert errors == []
    assert result_line(nb) == ["6"]
    assert counts(env) == {"fetch": 1}


IMPORTS_AND_STEP = """\
import json

@durable.step
def dump(x):
    bump("dump")
    return json.dumps(x)

@durable.workflow(run_id="same-cell")
def serialise(x):
    return dump(x)

print("RESULT", serialise([1, 2]))
"""


@pytest.mark.slow
def test_a_step_calling_a_module_imported_in_its_own_cell_is_fingerprinted(env: Path) -> None:
    """IPython compiles each statement of a cell on its own; Python 3.11+
    compiles `json.dumps(x)` differently when `import json` is in the same
    unit. The cell's source is that code: it was refused as edited after
    import ("no longer matches the running code") and nothing ran."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (SETUP, IMPORTS_AND_STEP, IMPORTS_AND_STEP)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    execute(nb, env)
    for cell in nb.cells[1:]:
        assert [o for o in cell.outputs if o["output_type"] == "error"] == []
    assert result_line(nb) == ["[1,", "2]"]
    assert counts(env) == {"dump": 1}  # the second cell replayed the same run


REGISTRY_CELLS = (
    """\
class Registry:
    def __init__(self, base):
        self.base, self.weights = base, {}

    def register(self, name, weight):
        self.weights[name] = weight

REGISTRY = Registry(1)
""",
    'REGISTRY.register("scale", 2)',
    """\
@durable.step
def scaled(x):
    bump("scaled")
    return REGISTRY.base + REGISTRY.weights["scale"] * x

@durable.workflow(run_id="registry", on_change="rerun")
def weigh(x):
    return scaled(x)

print("RESULT", weigh(3))
""",
    'print("RESULT", weigh(3))',
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edited", "old", "new", "result"),
    [
        (1, '"scale", 2', '"scale", 5', "16"),  # the method call's cell, run again edited
        (0, "Registry(1)", "Registry(4)", "10"),  # the binding cell, then the call's cell
    ],
)
def test_a_cell_calling_a_method_of_what_a_step_reads_counts(
    env: Path, edited: int, old: str, new: str, result: str
) -> None:
    """In one kernel, a cell that fills a registry through its method is
    edited and run again (with the cells after it): the step must run again
    (16 = 1 + 5 * 3), never replay the 7 its old arguments gave. A cell run
    after the one binding the name adds to it, never replaces it: an edit
    of `Registry(1)` counts as well. A cell that only shows the registry
    changes nothing."""
    cells = [SETUP, *REGISTRY_CELLS[:3], 'print(REGISTRY.weights)\nREGISTRY.weights["scale"]']
    cells += [REGISTRY_CELLS[3]]  # shown, then called again: replayed
    cells += [REGISTRY_CELLS[edited].replace(old, new), *REGISTRY_CELLS[edited + 1 : 2]]
    cells += [REGISTRY_CELLS[3]]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    execute(nb, env)
    for cell in nb.cells:
        assert [o for o in cell.outputs if o["output_type"] == "error"] == []
    shown = [str(o["text"]).split()[1] for o in nb.cells[5].outputs if o.get("name") == "stdout"]
    assert shown == ["7"]
    assert result_line(nb) == [result]
    assert counts(env) == {"scaled": 2}


DICT_CELLS = (
    'CFG = {"k": 1, "m": 1}',
    'CFG["k"] = 5',
    """\
@durable.step
def summed(x):
    bump("summed")
    return CFG["k"] + CFG["m"] + x

@durable.workflow(run_id="dict", on_change="rerun")
def add(x):
    return summed(x)

print("RESULT", add(3))
""",
    'print("RESULT", add(3))',
)


@pytest.mark.slow
def test_a_cell_changing_a_global_in_place_adds_to_the_cell_binding_it(env: Path) -> None:
    """`CFG = {...}` edited and run again, then `CFG["k"] = 5` run again:
    the second cell was taken as the one binding `CFG`, alone, so the edit
    of the first was not seen and the step replayed 9 (5 + 1 + 3) where it
    computes 10."""
    cells = [SETUP, *DICT_CELLS, DICT_CELLS[0].replace('"m": 1', '"m": 2'), *DICT_CELLS[1:2]]
    cells.append(DICT_CELLS[3])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    execute(nb, env)
    for cell in nb.cells:
        assert [o for o in cell.outputs if o["output_type"] == "error"] == []
    assert result_line(nb) == ["10"]
    assert counts(env) == {"summed": 2}
