"""The 37th new-user walk, through the Python API: options refused where
they are given, with messages that name what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import durable


@pytest.mark.parametrize("given", [5, ["a"], b"a", True, "a/b", ""])
def test_a_run_id_option_that_is_no_run_id_is_refused_where_it_is_given(given: Any) -> None:
    """Before: `@durable.workflow(run_id=5)` (or `with_options(run_id="a/b")`)
    was taken, and refused only at the workflow's first call, far from the
    line that gave it."""
    with pytest.raises(durable.ConfigurationError, match="invalid run id"):
        durable.workflow(run_id=given)(lambda: 1)
    with pytest.raises(durable.ConfigurationError, match="invalid run id"):
        durable.workflow(lambda: 1).with_options(run_id=given)
    assert durable.workflow(run_id=lambda: "r1")(lambda: 1).options.run_id() == "r1"


@pytest.mark.parametrize(("given", "told"), [(".hidden", "start with '.'"), ("a\\b", "'\\'")])
def test_a_run_id_refused_for_a_rule_the_message_did_not_state_names_it(
    given: str, told: str, store: durable.Store
) -> None:
    """Before: `.hidden` and `a\\b` were refused as run ids with a message
    listing '/', '..', whitespace, control and glob characters: neither
    rule they broke."""
    wf = durable.workflow(store=store)(lambda: 1)
    with pytest.raises(durable.ConfigurationError) as e:
        wf.with_options(run_id=given)()
    assert told in str(e.value)


def test_an_awaitable_left_unawaited_in_a_sync_workflow_says_to_await_it(
    store: durable.Store,
) -> None:
    """Before: a sync workflow returning `durable.loop_over(fetch, items)`
    of an async `fetch` (or an async step's call) failed with "cannot pickle
    'coroutine' object. Return plain data": not the missing `await`, in a
    workflow that must be `async def` to give it. The items never ran."""
    import gc
    import warnings

    ran: list[int] = []

    async def fetch(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(store=store, run_id="sync")
    def gather(n: int) -> list[int]:
        return durable.loop_over(fetch, list(range(n)))  # type: ignore[return-value]

    with warnings.catch_warnings():  # the coroutine's own "never awaited"
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(durable.SerializationError) as e:
            gather(2)
        said = str(e.value)
        del e  # its traceback holds the coroutine: collected here, not in another test
        gc.collect()
    assert "it holds a coroutine, which is never run unless awaited: make the workflow " \
        "`async def` and `await` it" in said  # fmt: skip
    assert ran == [] and gather.runs()[0].status == "failed"


LOOKED_AT = """\
import durable

@durable.step
def fetch(u: int) -> int:
    with open("ran", "a") as f:
        f.write("fetch\\n")
    return u * 2

@durable.workflow(run_id="looked-at")
def pipe(u: int) -> int:
    return fetch(u)
"""


@pytest.mark.slow  # a child IPython
def test_a_cell_that_asks_for_help_on_a_step_changes_nothing(tmp_path: Path) -> None:
    """Before: in a notebook, `help(fetch)`, `dir(fetch)` or
    `inspect.signature(fetch)` in a cell of its own counted as a statement
    that may change `fetch` (it is passed to a call), so the workflow's cell
    run again was refused as changed code ("now uses global fetch")."""
    from .clikit import run_cells

    looks = "import inspect\nhelp(fetch)\ndir(fetch)\ninspect.signature(fetch)\n" \
        "inspect.getsource(fetch)\ncallable(fetch)"  # fmt: skip
    again = 'print("RESULT", pipe(3))'
    done = run_cells(tmp_path, [LOOKED_AT, again, looks, again])
    assert [x for x in done.stdout.splitlines() if x.startswith("RESULT")] == ["RESULT 6"] * 2, \
        done.stdout[-2000:]  # fmt: skip
    assert (tmp_path / "ran").read_text() == "fetch\n"


@pytest.mark.parametrize(
    ("given", "meant"),
    [("dry-run=false", "--var dry_run=false"), ("n = 5", "--var n=5"), (" n=5", "--var n=5")],
)
def test_a_var_whose_name_is_written_as_the_shell_writes_it_names_the_one_meant(
    given: str, meant: str
) -> None:
    """Before: `--var dry-run=false` (a flag's spelling) or `--var 'n = 5'`
    said only "must look like NAME=VALUE", which it nearly did."""
    from durable._cli.common import UsageError
    from durable._cli.values import parse_vars

    with pytest.raises(UsageError) as e:
        parse_vars([given])
    assert str(e.value).endswith(f"must look like NAME=VALUE: {meant}?")
