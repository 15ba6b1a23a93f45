"""Checked by `mypy --strict` in `make test`: decorated functions keep their
signatures for type checkers. Not collected by pytest."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any, TypeVar

from typing_extensions import assert_type

import durable
from durable.events import StepExecuted


@durable.step
def fetch(repo: str) -> list[str]:
    return [repo]


@durable.step(retries=3, retry_delay=0.5)
def summarize(commit: str) -> str:
    return commit


@durable.step
async def afetch(n: int) -> int:
    return n


@durable.step(cache=durable.Cache(ignore=("verbose",)))
def cached(n: int, verbose: bool = False) -> float:
    return n / 2


# What Cache takes at run time: one name, or a list of them.
@durable.step(cache=durable.Cache(ignore="verbose", expire=60))
def cached_one(n: int, verbose: bool = False) -> int:
    return n


@durable.step(cache=durable.Cache(ignore=["verbose", "log"]))
def cached_list(n: int, verbose: bool = False, log: bool = False) -> int:
    return n


class Pipeline:
    """Steps in a class body are methods: through an instance, self is bound."""

    scale = 2

    @durable.step
    def double(self, n: int) -> int:
        return n * self.scale

    @durable.step
    async def adouble(self, n: int) -> int:
        return n * self.scale

    @durable.step(retries=1)
    def quadruple(self, n: int) -> int:
        return self.double(self.double(n))

    @durable.workflow
    def flow(self, n: int, label: str = "") -> int:
        return self.quadruple(n)

    @durable.workflow
    async def aflow(self, n: int) -> int:
        return await self.adouble(n)


class Model:
    """mypy applies a step's __get__ under @staticmethod and @classmethod too:
    a static step's first parameter was bound to the instance (`Model().helper(2)`
    rejected), a class method's was left unbound through the class."""

    @staticmethod
    @durable.step
    def helper(n: int) -> int:
        return n + 1

    @staticmethod
    @durable.step(retries=1)
    def label(n: int, *, unit: str = "s") -> str:
        return f"{n}{unit}"

    @classmethod
    @durable.step
    def build(cls, n: int) -> bytes:
        return bytes(n)

    @staticmethod
    @durable.workflow
    def flow(n: int) -> int:
        return n

    @classmethod
    @durable.workflow
    def cflow(cls, n: int) -> int:
        return n

    @staticmethod
    @durable.workflow
    async def aflow(n: int) -> int:
        return n


@durable.workflow
def notes(repo: str, decision: str | None = None) -> str:
    commits = fetch(repo)
    return ",".join(durable.loop_over(summarize, commits))


@durable.workflow(name="anotes")
async def anotes(n: int) -> int:
    return await afetch(n)


def check() -> None:
    assert_type(fetch("x"), list[str])
    assert_type(summarize("c"), str)
    assert_type(Pipeline().double(3), int)
    assert_type(Pipeline().quadruple(3), int)
    assert_type(Pipeline.double(Pipeline(), 3), int)
    assert_type(Pipeline().flow(3, label="x"), int)
    assert_type(Pipeline().flow.run(3), durable.Run[int])
    assert_type(Pipeline().flow.with_options(run_id="p")(3), int)
    assert_type(Pipeline().flow.resume("p"), durable.Run[int])
    assert_type(Model.helper(2), int)
    assert_type(Model().helper(2), int)
    assert_type(Model().label(2, unit="ms"), str)
    assert_type(Model.build(2), bytes)
    assert_type(Model().build(2), bytes)
    assert_type(Model().flow(2), int)
    assert_type(Model().flow.run(2), durable.Run[int])
    assert_type(Model().cflow(2), int)
    assert_type(cached(3, verbose=True), float)
    assert_type(durable.cache_info(cached).hits, int)
    assert_type(notes("org/repo"), str)
    assert_type(notes.run("org/repo"), durable.Run[str])
    assert_type(notes.run("org/repo").value, str)  # completed: never None (newuser55)
    assert_type(notes.resume("nightly").value.upper(), str)
    assert_type(notes.fork("nightly", at=1).value, str)
    nightly = notes.with_options(run_id="nightly")
    assert_type(nightly("org/repo", decision="approved"), str)
    assert_type(notes.resume("nightly", decision="ok"), durable.Run[str])
    assert_type(notes.run("org/repo").steps_total, int | None)
    assert_type(notes.runs()[0].steps_total, int | None)
    assert_type(notes.runs()[0].arguments, dict[str, Any])
    assert_type(notes.history("nightly")[0].value, Any)
    assert_type(durable.load(notes, "nightly", "2.0.1"), Any)
    assert_type(notes.with_options(progress_file="progress.json")("org/repo"), str)
    awf: durable.AsyncWorkflow[[int], int] = anotes
    assert awf is anotes


async def acheck() -> None:
    assert_type(await anotes(1), int)
    assert_type(await anotes.run(1), durable.Run[int])
    assert_type(await afetch(2), int)
    assert_type(await Pipeline().adouble(2), int)
    assert_type(await Pipeline().aflow(2), int)
    assert_type(await Pipeline().aflow.run(2), durable.Run[int])
    assert_type(await Model().aflow(2), int)
    assert_type(durable.loop_over(summarize, ["a"]), list[str])
    assert_type(await durable.loop_over(afetch, [1, 2], max_concurrency=4), list[int])
    seen: list[durable.Progress] = []
    assert_type(
        durable.loop_over(fetch, ["r"], checkpoint_items=True, progress=seen.append),
        list[list[str]],
    )
    assert_type(fetch.fingerprint, str)
    assert_type(notes.fingerprint, str)
    ctx = durable.current_run()
    assert_type(ctx, durable.RunContext | None)


# retry_on takes a list or a set as it does at run time, not only a tuple.
@durable.step(retries=2, retry_on=[ConnectionError, TimeoutError])
def listed(n: int) -> int:
    return n


@durable.step(retries=2, retry_on={ConnectionError})
def in_a_set(n: int) -> int:
    return n


assert_type(listed(1), int)
assert_type(in_a_set(1), int)

T = TypeVar("T")


# A generic step stays generic: its calls return what they are given.
@durable.step
def first_of(xs: Sequence[T]) -> T:
    return xs[0]


@durable.step(retries=1)
def last_of(xs: Sequence[T]) -> T:
    return xs[-1]


assert_type(first_of([1, 2]), int)
assert_type(last_of(["a"]), str)


def events_are_read_only(event: StepExecuted) -> None:
    # Frozen for type checkers too (their methods are written once: durable/_frozen.py).
    event.run_id = "other"  # type: ignore[misc]


def misspelt_names_are_errors() -> None:
    # The package's lazy __getattr__ is run time only: a name durable does not
    # have (`durable.runs`, a typo) is an error for mypy, not an Any.
    durable.runs("store")  # type: ignore[attr-defined]
    durable.loop_ovr(fetch, ["r"])  # type: ignore[attr-defined]


def paths_are_stores(folder: pathlib.Path) -> None:
    # A pathlib.Path is a store wherever open_store takes one (run time did).
    assert_type(durable.gc(folder, keep_last=1), list[durable.RunInfo])
    assert_type(durable.cache_info(fetch, store=folder), durable.CacheInfo)
    assert_type(durable.open_store(folder), durable.Store)


# Generic workflows. mypy solved a generic `def`'s T to fit the overload for
# an `async def`: `echo` was an AsyncWorkflow and `echo(1) + 1` an error. The
# plugin (durable/mypy_plugin.py, [tool.mypy] plugins) decides as run time does.
@durable.workflow
def echo(x: T) -> T:
    return x


@durable.workflow(name="echo_named")
def echo_named(x: T) -> T:
    return x


@durable.workflow
async def aecho(x: T) -> T:
    return x


@durable.workflow(name="aecho_named")
async def aecho_named(x: T) -> T:
    return x


class Generic_:
    # mypy bound a generic method to [Never] parameters (the plugin's
    # `bound_generic`): every call of `Generic_().same(1)` was an error.
    @durable.workflow
    def same(self, x: T) -> T:
        return x

    @durable.workflow
    async def asame(self, x: T) -> T:
        return x

    @classmethod
    @durable.workflow
    def class_same(cls, x: T) -> T:
        return x

    @durable.step
    def step_same(self, x: T) -> T:
        return x

    @durable.step
    async def astep_same(self, x: T) -> T:
        return x

    @classmethod
    @durable.step
    def class_step(cls, x: T) -> T:
        return x

    @staticmethod
    @durable.workflow
    def static_same(x: T) -> T:
        return x

    @staticmethod
    @durable.workflow
    async def astatic_same(x: T) -> T:
        return x


assert_type(echo(1), int)
assert_type(echo("a") + "b", str)
assert_type(echo_named(1.5), float)
assert_type(echo.run(1), durable.Run[int])
assert_type(echo.resume("r").run_id, str)  # a Run (of what the run recorded), not an awaitable
assert_type(echo.with_options(run_id="r")(b"x"), bytes)
assert_type(echo_named.with_options(run_id="r").run(1), durable.Run[int])
assert_type(Generic_().static_same("a"), str)
assert_type(Generic_().same(1), int)
assert_type(Generic_().same.run(1), durable.Run[int])
assert_type(Generic_().same.with_options(run_id="r")("a"), str)
assert_type(Generic_().class_same(2.0), float)
assert_type(Generic_().step_same(b"x"), bytes)
assert_type(Generic_().class_step(1), int)
assert_type(Generic_.class_step(1), int)


async def ageneric() -> None:
    assert_type(await aecho(1), int)
    assert_type(await aecho_named("a"), str)
    assert_type(await aecho.run(1), durable.Run[int])
    assert_type((await aecho.resume("r")).run_id, str)
    assert_type(await aecho.with_options(run_id="r")(1), int)
    assert_type(await Generic_().astatic_same(1), int)
    assert_type(await Generic_().asame(1), int)
    assert_type(await Generic_().asame.run(1), durable.Run[int])
    assert_type(await Generic_().astep_same("a"), str)
    assert_type(await anotes.resume("r"), durable.Run[int])
    assert_type(await anotes.with_options(run_id="r")(1), int)
