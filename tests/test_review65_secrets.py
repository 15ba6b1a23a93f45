"""What a `persist=False` step returned never reaches the store by another way:
a block of a function calling it, a step returning it on, a cache entry, a
fork, a child run's result (review64's C15). The proof is a grep over every
byte the store holds; counts show what runs again on resume instead."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable.errors import SerializationError

TOKEN = "tok-" + "8d1e5c-session"  # built at run time: no constant of this file holds it


def store_bytes(root: Path) -> bytes:
    chunks = [Path(d, f).read_bytes() for d, _, files in os.walk(root) for f in files]
    assert chunks, "the store is empty: the grep would prove nothing"
    return b"\n".join(chunks)


def assert_absent(root: Path) -> None:
    data = store_bytes(root)
    for form in (TOKEN.encode(), TOKEN.encode("utf-16-le"), TOKEN[::-1].encode()):
        assert form not in data


def test_a_block_a_step_and_a_cache_entry_keep_no_unpersisted_value(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    fail = {"last": True}

    @durable.step(name="login", persist=False)
    def login(user: str) -> str:
        runs["login"] += 1
        return "".join(["tok-", "8d1e5c-session"])  # a new object each call, as a secret read is

    @durable.step(name="echo")
    def echo(token: str) -> dict[str, str]:
        runs["echo"] += 1
        return {"auth": token}

    @durable.step(name="cached", cache=True)
    def cached(n: int, token: str) -> list[str]:
        runs["cached"] += 1
        return [token] * n

    @durable.step(name="last")
    def last() -> int:
        runs["last"] += 1
        if fail["last"]:
            raise RuntimeError("not yet")
        return 1

    @durable.workflow(name="keeps", store=str(tmp_path / "store"), run_id="r1")
    def keeps() -> int:
        tokens = durable.loop_over(lambda user: login(user), ["a", "b"])
        echoed = echo(tokens[0])
        cached(2, echoed["auth"])
        return last()

    with pytest.raises(RuntimeError, match="not yet"):
        keeps()
    assert runs == {"login": 2, "echo": 1, "cached": 1, "last": 1}
    assert_absent(tmp_path / "store")
    fail["last"] = False
    assert keeps() == 1
    # Nothing holding the token was kept, so all of it ran again; `last` ran twice (it failed once).
    assert runs == {"login": 4, "echo": 2, "cached": 2, "last": 2}
    assert_absent(tmp_path / "store")
    fork = keeps.with_options(run_id="r1-fork").fork("r1", at=3)
    assert fork.value == 1
    assert_absent(tmp_path / "store")


def test_a_workflow_or_a_child_returning_it_is_refused(tmp_path: Path) -> None:
    store = str(tmp_path / "store")

    @durable.step(name="login", persist=False)
    def login() -> str:
        return "".join(["tok-", "8d1e5c-session"])

    @durable.workflow(name="child", store=store)
    def child() -> list[str]:
        return [login()]

    @durable.workflow(name="parent", store=store, run_id="p1")
    def parent() -> int:
        return len(child())

    with pytest.raises(SerializationError, match="persist=False"):
        parent()
    assert_absent(tmp_path / "store")


def test_a_number_it_returned_is_not_kept_as_the_next_calls_bytes(tmp_path: Path) -> None:
    # A call of numbers keeps its canonical bytes, which spell them: a PIN read by a
    # persist=False step and passed on was written in the next step's record.
    @durable.step(name="pin", persist=False)
    def pin() -> int:
        return int("98765" + "432123")

    @durable.step(name="use")
    def use(code: int) -> int:
        return 1

    @durable.workflow(name="pins", store=str(tmp_path / "store"), run_id="p1")
    def pins() -> int:
        return use(pin())

    assert pins() == 1
    assert b"98765432123" not in store_bytes(tmp_path / "store")
