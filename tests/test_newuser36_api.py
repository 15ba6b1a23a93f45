"""The 36th new-user walk, in process: decorator and store options,
messages and warnings of the library that misled someone following the docs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import durable


@pytest.mark.parametrize("kind", ["step", "workflow"])
@pytest.mark.parametrize(
    ("version", "shown"), [(3, "3 (int)"), (1.10, "1.1 (float)"), ("", "'' (str)"), (b"2", "b'2' (bytes)")]
)
def test_a_version_that_is_not_a_non_empty_string_is_refused(
    kind: str, version: object, shown: str
) -> None:
    """Before: version=1.10 was taken as "1.1" (the same as version=1.1),
    version="" as a version, and any object by its str(), an address in it
    changing with every process; the docs give version= a string."""
    decorator: Any = durable.step if kind == "step" else durable.workflow
    with pytest.raises(durable.ConfigurationError) as e:
        decorator(version=version)(lambda x: x)
    assert str(e.value) == (
        f"{kind} version= takes a non-empty string, such as version=\"2\", not {shown}"
    )


def test_a_workflow_name_that_is_empty_is_refused() -> None:
    """Before: @durable.workflow(name="") fell back to the function's name
    without a word (a step's name="" is refused)."""
    with pytest.raises(durable.ConfigurationError) as e:
        durable.workflow(name="")(lambda x: x)
    assert str(e.value) == "workflow name= takes a non-empty string, not '' (str)"


def test_a_step_decorated_twice_is_refused(tmp_path: Path) -> None:
    """Before: `@durable.step(retries=3)` written over
    `@durable.step(persist=False)` was taken: the inner step ran as a plain
    call inside the outer one, whose persist=True recorded the secret the
    inner one kept out of the store (a workflow decorated twice is refused)."""

    def fetch(x: int) -> int:
        return x

    with pytest.raises(durable.ConfigurationError) as e:
        durable.step(retries=3)(durable.step(fetch))
    assert "fetch is already a durable step: decorate the function once" in str(e.value)
    assert "@durable.step(retries=3, ...)" in str(e.value)


def test_a_steps_warning_in_a_script_points_at_its_call(store: durable.Store) -> None:
    """The library's warnings take the same rule: the in-place one pointed at
    durable/_core/steps.py."""

    @durable.step
    def add(rows: list[int]) -> int:
        rows.append(1)
        return len(rows)

    @durable.workflow(store=store)
    def grow(n: int) -> int:
        return add([n])

    with pytest.warns(UserWarning, match="changed an object it was given") as told:
        grow(1)
    assert [w.filename for w in told] == [__file__]


def test_the_readme_example_run_again_says_how_to_read_its_result(store: durable.Store) -> None:
    """Before: the README's example, run a second time as a script, raised
    "completed with other arguments than this call's: reviewer_decision:
    'approved' -> None" with three ways out, each running or discarding
    something; reading the result it completed with (the gotcha's advice)
    was not among them."""
    fetched: list[str] = []

    @durable.step
    def fetch(repo: str) -> list[str]:
        fetched.append(repo)
        return ["a"]

    @durable.workflow(store=store)
    def notes(repo: str, reviewer_decision: str | None = None) -> str:
        commits = fetch(repo)
        if reviewer_decision is None:
            durable.suspend("waiting for reviewer_decision")
        return f"{reviewer_decision}: {commits}"

    with pytest.raises(durable.Suspended) as waiting:
        notes("org/repo")
    assert notes.resume(waiting.value.run_id, reviewer_decision="ok").value == "ok: ['a']"
    with pytest.raises(durable.DefinitionChangedError) as again:
        notes("org/repo")
    run_id = waiting.value.run_id
    assert (
        f"  * read the result it completed with: resume({run_id!r}) returns it "
        f"(durable show {run_id})\n"
    ) in str(again.value)
    assert notes.resume(run_id).value == "ok: ['a']"
    assert fetched == ["org/repo"]


@pytest.mark.parametrize(
    ("option", "told"),
    [
        ({"allow_pickle": "no"}, "allow_pickle= takes True or False, not 'no' (str)"),
        ({"signing_key": ""}, "signing_key= is empty"),
        ({"signing_key": 3}, "signing_key= takes a str or bytes key, not 3 (int)"),
        ({"blob_threshold": "1"}, "blob_threshold= takes a whole number of bytes >= 0, not '1'"),
    ],
)
def test_a_store_option_of_the_wrong_type_is_refused(
    option: dict[str, Any], told: str, tmp_path: Path
) -> None:
    """Before: open_store(allow_pickle="no") (a truthy string) loaded
    pickles, signing_key="" (an unset secret) wrote unsigned records without
    a word, and signing_key=3 or blob_threshold="1" failed at the first
    write with a TypeError far from the option."""
    with pytest.raises(durable.ConfigurationError, match="^" + re.escape(told)):
        durable.open_store(tmp_path / "s", **option)
    assert not (tmp_path / "s").exists()


def test_a_value_that_holds_itself_is_said_to(store: durable.Store) -> None:
    """Before: a step returning a list that contains itself failed with "it
    is nested deeper than Python's recursion limit": the list is two levels
    deep, and nothing said to look for a cycle."""
    ran: list[int] = []

    @durable.step
    def build() -> list[object]:
        ran.append(1)
        looped: list[object] = [1]
        looped.append(looped)
        return looped

    @durable.workflow(store=store)
    def flow() -> int:
        return len(build())

    with pytest.raises(durable.SerializationError, match=r"or holds itself \(a list, dict or "):
        flow()
    assert ran == [1]


def test_a_run_id_function_that_cannot_take_the_arguments_says_how_it_is_called(
    store: durable.Store,
) -> None:
    """Before: `run_id=lambda day, **_: ...` on a workflow of (day, extra)
    raised "TypeError: <lambda>() takes 1 positional argument but 2 were
    given", naming neither run_id= nor how it is called (`durable run`:
    exit 1, as a failed run)."""
    ran: list[int] = []

    @durable.workflow(store=store, run_id=lambda day, **_: f"daily-{day}")
    def daily(day: str, extra: int = 0) -> int:
        ran.append(extra)
        return extra

    with pytest.raises(durable.ConfigurationError) as e:
        daily("2024-01-01", extra=5)
    said = str(e.value)
    assert said.startswith(f"the run_id= function of {daily.name} raised TypeError: "), said
    assert "<lambda>() takes 1 positional argument but 2 were given; it is called as the " in said
    assert said.endswith(
        "workflow is, with its arguments in order: (day='2024-01-01', extra=5). Nothing was run"
    )
    assert ran == [] and store.workflows() == []


@pytest.mark.parametrize(
    ("option", "told"),
    [
        ({"older_than": "7d"}, "older_than= takes seconds (a number) or a datetime.timedelta, "
         "not '7d' (the command line's form): older_than=datetime.timedelta(days=7)"),
        ({"keep_last": "3"}, "keep_last= takes a whole number >= 0, not '3'"),
        ({"keep_last": True}, "keep_last= takes a whole number >= 0, not True"),
    ],
)
def test_a_gc_option_of_the_wrong_type_is_refused(
    option: dict[str, Any], told: str, store: durable.Store
) -> None:
    """Before: gc(older_than="7d"), the form `durable gc --older-than 7d`
    takes, raised "ValueError: could not convert string to float: '7d'";
    keep_last="3" a TypeError and keep_last=True kept one run."""

    @durable.workflow(store=store, run_id="r")
    def flow() -> int:
        return 1

    flow()
    with pytest.raises(durable.ConfigurationError) as e:
        durable.gc(store, **option)
    assert str(e.value) == told
    assert [r.run_id for r in flow.runs()] == ["r"]


def test_a_cache_ignore_that_is_not_names_is_refused() -> None:
    """Before: durable.Cache(ignore=3) raised "TypeError: 'int' object is not
    iterable"; every other wrong Cache option is a ConfigurationError."""
    with pytest.raises(durable.ConfigurationError, match=r"takes argument names, not 3$"):
        durable.Cache(ignore=3)  # type: ignore[arg-type]
    assert durable.Cache(ignore=["lock"]).ignore == ("lock",)
