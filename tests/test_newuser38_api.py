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

@durable.workflow
def inner():
    return s()

@durable.workflow(run_id="r")
def wf():
    return inner()
""",
    'print("RESULT", call(lambda: wf()))',
    "call(s)",
    "sorted([], key=s), max([], key=s, default=0), list(map(s, [])), list(filter(s, []))",
    "inner.runs()",
    "inner.history(inner.runs()[0].run_id)",
    "s.__wrapped__()",
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
    again was refused ("now uses global s; now uses helper __main__.call"),
    as after `sorted(xs, key=s)`, `max(xs, key=s)` or `map(s, xs)`, and
    after a cell that looks at the runs of a workflow `wf` calls
    (`inner.runs()`) or calls the step's own function (`s.__wrapped__()`):
    a method of a workflow or a step changes nothing of it.
    A function that changes what it is given in place still counts: `fill(s,
    CFG)` changes the dict the step reads, and the next call is refused."""
    from .clikit import run_cells

    done = run_cells(tmp_path, CELLS)
    results = [x for x in done.stdout.splitlines() if x.startswith("RESULT")]
    assert results == ["RESULT 1", "RESULT 1"], done.stdout[-3000:]
    assert "DefinitionChangedError" in done.stdout and "global CFG changed" in done.stdout
    assert (tmp_path / "ran").read_text() == "s\ns\ns\n"  # then by `call(s)`, `s.__wrapped__()`


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


def test_a_durable_signing_key_set_but_empty_warns_that_records_are_unsigned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `export DURABLE_SIGNING_KEY=$(cat /run/secrets/durable-key)`
    (the storage page's line) with the secret missing set the variable to
    "": records were written unsigned without a word, as if no key was
    meant (signing_key="" in Python is refused). Now a warning says so;
    the run itself still works, unsigned."""
    import durable

    monkeypatch.setenv("DURABLE_SIGNING_KEY", "")
    with pytest.warns(UserWarning, match="DURABLE_SIGNING_KEY is set but empty: records are "
                                         "written and read unsigned"):  # fmt: skip
        store = durable.open_store(str(tmp_path / "store"))
    assert durable.workflow(store=store, run_id="r")(lambda: 1)() == 1


def test_loop_over_given_no_iterable_says_so_and_names_a_swap(store: object) -> None:
    """Before: `durable.loop_over(fetch, 5)` failed the run with a bare
    "TypeError: 'int' object is not iterable", and `loop_over(items,
    fetch)` (the arguments swapped) with "'function' object is not
    iterable"; nothing said which argument."""
    import durable

    ran: list[int] = []

    def fetch(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(store=store)
    def given(n: int) -> list[int]:
        return durable.loop_over(fetch, n)  # type: ignore[arg-type]

    @durable.workflow(store=store)
    def swapped(n: int) -> list[int]:
        return durable.loop_over([n], fetch)  # type: ignore[arg-type]

    with pytest.raises(durable.ConfigurationError) as e:
        given(5)
    assert "loop_over() takes the items as an iterable (a list, a range, ...), not 5" in str(e.value)
    with pytest.raises(durable.ConfigurationError) as e:
        swapped(5)
    assert "loop_over(fn, items): the function first, then the items" in str(e.value)
    assert ran == []
