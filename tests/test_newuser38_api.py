"""The 38th new-user walk, through the Python API and in a notebook."""

from __future__ import annotations

from pathlib import Path

import pytest

CELLS = [
    """\
import durable

CFG = {"k": 1}

def call(f, *args):
    return f(*args)

def fill(f, d):
    d["k"] = 2

@durable.step
def s():
    with open("ran", "a") as out:
        out.write("s\\n")
    return CFG["k"]

@durable.workflow(run_id="r")
def wf():
    return s()
""",
    'print("RESULT", call(lambda: wf()))',
    "call(s)",
    'print("RESULT", call(lambda: wf()))',
    "fill(s, CFG)",
    'print("RESULT", call(lambda: wf()))',
]


@pytest.mark.slow  # a child IPython
def test_a_cell_that_hands_a_step_to_a_function_that_only_calls_it_changes_nothing(
    tmp_path: Path,
) -> None:
    """Before: after `call(lambda: wf())` ran the workflow, a cell `call(s)`
    (a helper of the notebook that calls what it is given) counted as a
    statement that may change the step `s`, and the workflow's cell run
    again was refused ("now uses global s; now uses helper __main__.call").
    A function that changes what it is given in place still counts: `fill(s,
    CFG)` changes the dict the step reads, and the next call is refused."""
    from .clikit import run_cells

    done = run_cells(tmp_path, CELLS)
    results = [x for x in done.stdout.splitlines() if x.startswith("RESULT")]
    assert results == ["RESULT 1", "RESULT 1"], done.stdout[-3000:]
    assert "DefinitionChangedError" in done.stdout and "global CFG changed" in done.stdout
    assert (tmp_path / "ran").read_text() == "s\ns\n"  # the second only by `call(s)` itself


@pytest.mark.parametrize(("given", "told"), [(5, "store= must be a folder, an fsspec URL or a "
                                                  "durable.Store, not 5"),
                                             ("", "store= is empty"), ("  ", "store= is empty")])  # fmt: skip
def test_a_store_option_that_is_no_store_is_refused_where_it_is_given(given: object, told: str) -> None:
    """Before: `@durable.workflow(store=5)` or `with_options(store="")` was
    taken, and refused only at the workflow's first call ("int is not a key
    store: it lacks get, ..."), far from the line that gave it."""
    import durable

    with pytest.raises(durable.ConfigurationError, match=told):
        durable.workflow(store=given)(lambda: 1)  # type: ignore[arg-type]
    with pytest.raises(durable.ConfigurationError, match=told):
        durable.workflow(lambda: 1).with_options(store=given)  # type: ignore[arg-type]
