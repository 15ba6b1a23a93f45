"""A step re-defined in a notebook after its run stopped: the refusal named
"global seen changed" beside "code changed" for a list only the step
writes (`seen.append(x)`), whose binding another cell holds: counted by its
value, which the step's own append had changed. In process: each cell a
file of its own, run in one namespace as a notebook runs its cells."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

import durable

CELL_1 = "import durable\nseen = []\nexecuted = []\n"
STEP = """\
@durable.step
def fetch(x: int) -> int:
    seen.append(x)
    executed.append(x)
    return x + {n}
"""
FLOW = """\
@durable.workflow(name="cells54", run_id="r")
def flow(x: int = 1) -> int:
    y = fetch(x)
    durable.suspend("later")
    return y
"""


def _run(cell: Path, text: str, namespace: dict[str, object]) -> None:
    cell.write_text(text)
    exec(compile(text, str(cell), "exec"), namespace)


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    namespace = types.ModuleType("cells54").__dict__
    for k, text in enumerate([CELL_1, STEP.format(n=1), FLOW]):
        _run(tmp_path / f"cell{k}.py", text, namespace)
    return namespace


def test_a_refusal_after_a_step_s_code_change_names_no_global_only_the_step_writes(
    notebook: dict[str, object], tmp_path: Path
) -> None:
    flow = notebook["flow"]
    with pytest.raises(durable.Suspended):
        flow()  # type: ignore[operator]
    assert notebook["executed"] == [1]
    _run(tmp_path / "cell3.py", STEP.format(n=2), notebook)
    _run(tmp_path / "cell4.py", FLOW, notebook)
    with pytest.raises(durable.DefinitionChangedError) as refused:
        notebook["flow"]()  # type: ignore[operator]
    assert notebook["executed"] == [1]
    said = refused.value.changed_steps["fetch"]
    assert said.startswith("code changed: "), said  # before: "code changed; global seen changed: ..."


def test_a_global_bound_beside_the_step_is_still_named_when_its_statement_changed(
    notebook: dict[str, object], tmp_path: Path
) -> None:
    """Fail closed: a global whose statements are more than the step's own
    `def` (here `seen = [0]` in the step's cell) is named as before."""
    with pytest.raises(durable.Suspended):
        notebook["flow"]()  # type: ignore[operator]
    _run(tmp_path / "cell3.py", "seen = [0]\n\n\n" + STEP.format(n=2), notebook)
    _run(tmp_path / "cell4.py", FLOW, notebook)
    with pytest.raises(durable.DefinitionChangedError) as refused:
        notebook["flow"]()  # type: ignore[operator]
    assert notebook["executed"] == [1]
    assert "global seen changed" in refused.value.changed_steps["fetch"]
