"""A `persist=False` step's output is held with its dict's keys, not only its
values (review66): `{token: scopes}` returned by a login step, and a later
step returning the key, wrote the token to the store. The proof is a grep
over every byte the store holds; counts show what runs again on resume."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable.errors import SerializationError


def secret() -> str:
    return "".join(["tok-", "77c0a9-", "session"])  # made at run time, as a token read is


def store_bytes(root: Path) -> bytes:
    chunks = [Path(d, f).read_bytes() for d, _, files in os.walk(root) for f in files]
    assert chunks, "the store is empty: the grep would prove nothing"
    return b"\n".join(chunks)


def test_a_key_of_its_dict_returned_on_is_not_written_and_runs_again(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    fail = {"now": True}

    @durable.step(persist=False)
    def login() -> dict[str, list[str]]:
        runs["login"] += 1
        return {secret(): ["read"]}

    @durable.step
    def token_of(grants: dict[str, list[str]]) -> str:
        runs["token_of"] += 1
        return next(iter(grants))

    @durable.step
    def names(grants: dict[str, list[str]]) -> list[str]:
        runs["names"] += 1
        return list(grants)

    @durable.step
    def scopes(grants: dict[str, list[str]]) -> int:
        runs["scopes"] += 1
        return len(next(iter(grants.values())))

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> int:
        grants = login()
        size = len(token_of(grants)) + len(names(grants)) + scopes(grants)
        if fail["now"]:
            raise RuntimeError("crash after the steps")
        return size

    with pytest.raises(RuntimeError):
        flow()
    fail["now"] = False
    assert flow() == len(secret()) + 2
    # The steps that returned the key left markers and ran again; the count did not.
    assert runs == Counter(login=2, token_of=2, names=2, scopes=1)
    assert secret().encode() not in store_bytes(tmp_path)


def test_a_workflow_returning_the_key_is_refused(tmp_path: Path) -> None:
    @durable.step(persist=False)
    def login() -> dict[str, int]:
        return {secret(): 1}

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> str:
        return next(iter(login()))

    with pytest.raises(SerializationError, match="persist=False"):
        flow()
    assert secret().encode() not in store_bytes(tmp_path)
