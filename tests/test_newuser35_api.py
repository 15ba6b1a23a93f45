"""The 35th new-user walk, in process: decorator options of the wrong type
that were taken without a word, or failed with an unrelated error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import durable


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": 3}, "step name= takes a non-empty string, not 3 (int)"),
        ({"name": ""}, "step name= takes a non-empty string, not '' (str)"),
        ({"persist": "False"}, "persist= takes True or False, not 'False' (str)"),
        ({"deep": 0}, "deep= takes True or False, not 0 (int)"),
    ],
)
def test_a_step_option_of_the_wrong_type_is_refused(options: dict[str, Any], message: str) -> None:
    """Before: name=3 failed with "AttributeError: 'int' object has no
    attribute 'encode'"; name='' quietly fell back to the function's name;
    persist="False" (a truthy string) recorded the output the user meant to
    keep out of the store."""
    with pytest.raises(durable.ConfigurationError) as e:
        durable.step(**options)(lambda x: x)
    assert str(e.value) == message


def test_persist_false_still_keeps_the_output_out_of_the_store(tmp_path: Path) -> None:
    """The check takes the booleans it always took: persist=False records no output."""
    ran: list[int] = []

    @durable.step(persist=False)
    def secret(x: int) -> str:
        ran.append(x)
        return "s3cr3t"

    @durable.workflow(store=str(tmp_path))
    def flow(x: int) -> int:
        return len(secret(x))

    assert flow(1) == 6
    assert ran == [1]
    assert not any(b"s3cr3t" in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_a_store_whose_filesystem_is_not_installed_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    """Before: a StorageError "store gs://bucket/runs failed: cannot open it:
    ImportError: Please install gcsfs to access Google Storage. Records
    already written are intact." on the first call."""
    ran: list[int] = []

    @durable.step
    def one(x: int) -> int:
        ran.append(x)
        return x

    @durable.workflow(store="gs://bucket/runs")
    def flow(x: int) -> int:
        return one(x)

    with pytest.raises(durable.ConfigurationError) as e:
        flow(1)
    assert str(e.value) == (
        "store gs://bucket/runs cannot be opened here: gcsfs is not installed (pip install "
        "gcsfs). Nothing was read or written."
    )
    assert ran == []


def test_a_step_returning_a_generator_is_told_to_return_a_list(tmp_path: Path) -> None:
    """Before: "... cannot be recorded: TypeError: cannot pickle 'generator'
    object", which says what failed but not what to return instead."""
    ran: list[str] = []

    @durable.step(name="first")
    def first() -> int:
        ran.append("first")
        return 2

    @durable.step(name="squares")
    def squares(n: int) -> Any:
        ran.append("squares")
        return (i * i for i in range(n))

    @durable.workflow(store=str(tmp_path), run_id="g")
    def flow() -> list[int]:
        return list(squares(first()))

    with pytest.raises(durable.SerializationError) as e:
        flow()
    assert str(e.value) == (
        "the output of 'squares' (type generator) cannot be recorded: TypeError: it holds a "
        "generator, which is used up as it is read and cannot be replayed: return a list "
        "(list(...)) of what it yields. Return plain data (or something cloudpickle can "
        "carry), or mark the step persist=False. Earlier records are intact; fix it and call "
        "again to resume."
    )
    assert ran == ["first", "squares"]
    (step,) = flow.history("g")[1:]
    assert (step.name, step.status, step.preview) == ("first", "completed", "2")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"max_concurrency": "2"},
            "loop_over(max_concurrency=...) must be a whole number, at least 1; not '2'",
        ),
        (
            {"max_concurrency": 0},
            "loop_over(max_concurrency=...) must be a whole number, at least 1; not 0",
        ),
        (
            {"checkpoint_items": "no"},
            "loop_over(checkpoint_items=...) takes True or False, not 'no'",
        ),
        ({"name": 3}, "loop_over(name=...) takes a non-empty string or None, not 3"),
    ],
)
def test_a_loop_over_option_of_the_wrong_type_is_refused_before_the_block(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    """Before: max_concurrency="2" failed with "TypeError: '<' not supported
    between instances of 'str' and 'int'"; checkpoint_items="no" (truthy)
    checkpointed, and name=3 was taken."""
    ran: list[int] = []

    @durable.step(name="square")
    def square(x: int) -> int:
        ran.append(x)
        return x * x

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> list[int]:
        return durable.loop_over(square, [1, 2], **options)

    with pytest.raises(durable.ConfigurationError) as e:
        flow()
    assert str(e.value) == message
    assert ran == []
    assert [s.name for s in flow.history("r")[1:]] == []  # the block took no position


@pytest.mark.parametrize("option", ["restart", "rebase"])
def test_restart_or_rebase_of_the_wrong_type_is_refused_and_the_records_stay(
    tmp_path: Path, option: str
) -> None:
    """Before: `with_options(restart="no")` (a truthy string) discarded the
    run's records and executed every step again."""
    ran: list[int] = []

    @durable.step(name="work")
    def work(x: int) -> int:
        ran.append(x)
        return x + 1

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow(x: int) -> int:
        return work(x)

    assert flow(1) == 2
    with pytest.raises(durable.ConfigurationError) as e:
        flow.with_options(**{option: "no"})
    assert str(e.value) == f"{option}= takes True or False, not 'no'"
    assert flow.run(1).steps_replayed == 0  # a completed run: its value, nothing executed
    assert ran == [1]
    assert [(s.name, s.preview) for s in flow.history("r")[1:]] == [("work", "2")]
