"""perf59: the checks this round added to every recorded step cost nothing
for values that cannot need them, and still refuse or mark what they did.

`pack_plain` answers "a byte buffer, or one list or dict held twice" in one
walk, which a level holding a single container passes without comparing
ids; the persist=False check (`unkept.holds`) is not even called by a run
where no persist=False step returned anything, and a child run asks its
root run's marks (one dict, shared)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core import unkept
from durable._storage.codec import MSGPACK, decode_value, encode_value, pack_plain

ROW = [1, 2]
BOTH = {"k": 1}
DEEP = [[ROW]]


def _held_twice() -> list[Any]:
    shared = [7]
    return [
        [ROW, ROW],  # one level, two items
        {"a": BOTH, "b": BOTH},
        [ROW, [ROW]],  # met at two levels
        [ROW, [[ROW]]],  # again at a level holding it alone
        [[ROW], [ROW]],  # at the second level
        {"x": [DEEP], "y": DEEP},
        [ROW] * 20,  # a long level (told in C)
        [[i] for i in range(30)] + [[shared], shared],
        {"rows": [{"r": shared}], "again": {"r": shared}},
    ]


def _buffers() -> list[Any]:
    return [
        [1, bytearray(b"x")],
        {"a": [memoryview(b"m")]},
        {memoryview(b"k"): 1},  # a key: a dict with one not a str lists its keys
        [[1, 2], [[bytearray(b"deep")]]],
        [*range(40), bytearray(b"late")],
        {str(i): i for i in range(20)} | {"b": bytearray(b"b")},
    ]


def _plain() -> list[Any]:
    return [
        {"i": 300, "name": "item-300", "values": [300, 600, 900]},
        {"i": 1, "n": 2.5, "s": "x"},
        list(range(100_000)),
        [[1, 2], [1, 2], [[3]]],  # equal, not the same
        {str(i): [i] for i in range(40)},
        [[[[[1]]]]],
        [b"bytes", "str", None, True],
    ]


@pytest.mark.parametrize("value", _held_twice())
def test_one_list_or_dict_held_twice_is_pickled_and_comes_back_one(value: Any) -> None:
    assert pack_plain(value) is None
    assert pack_plain(value, sharing=False) is not None  # a store allowing no pickle: two lists
    encoding, data = encode_value(value, allow_pickle=True)
    assert encoding != MSGPACK
    assert decode_value(encoding, data) == value


@pytest.mark.parametrize("value", _buffers())
def test_a_byte_buffer_is_never_packed_as_bytes(value: Any) -> None:
    assert pack_plain(value) is None
    assert pack_plain(value, sharing=False) is None


@pytest.mark.parametrize("value", _plain())
def test_plain_values_stay_msgpack(value: Any) -> None:
    packed = pack_plain(value)
    assert packed is not None
    assert decode_value(MSGPACK, packed) == value


def test_a_run_without_unkept_outputs_never_calls_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: Counter[str] = Counter()
    real = unkept.holds

    def counted(ctx: Any, value: Any) -> bool:
        asked["holds"] += 1
        return real(ctx, value)

    monkeypatch.setattr(unkept, "holds", counted)
    runs: Counter[str] = Counter()

    @durable.step(name="row")
    def row(i: int) -> dict[str, Any]:
        runs["row"] += 1
        return {"i": i, "values": [i, i * 2]}

    @durable.workflow(name="plain", store=durable.open_store(tmp_path / "s", durability="none"), run_id="r")
    def plain() -> int:
        return sum(row(i)["i"] for i in range(5))

    assert plain() == 10
    # Per step, the run's marks are found empty without a call; the result is asked once.
    assert runs["row"] == 5 and asked["holds"] == 1


def test_a_child_run_finds_its_parents_unkept_output(tmp_path: Path) -> None:
    """The parent's persist=False step returned the token; a step of a child
    run returns it on (read from a list both see): the child asks the root
    run's marks, so the step leaves a marker: its output reaches no byte of
    the store."""
    store = str(tmp_path / "store")
    runs: Counter[str] = Counter()
    box: list[str] = []
    fail = {"last": True}

    @durable.step(name="login", persist=False)
    def login() -> str:
        runs["login"] += 1
        return "".join(["tok-", "8d1e5c-child"])

    @durable.step(name="echo")
    def echo() -> dict[str, str]:
        runs["echo"] += 1
        return {"auth": box[-1]}

    @durable.workflow(name="kid", store=store)
    def kid() -> int:
        return len(echo())

    @durable.step(name="last")
    def last() -> int:
        runs["last"] += 1
        if fail["last"]:
            raise RuntimeError("not yet")
        return 1

    @durable.workflow(name="parent", store=store, run_id="p1")
    def parent() -> int:
        box.append(login())
        return kid() + last()

    with pytest.raises(RuntimeError, match="not yet"):
        parent()
    fail["last"] = False
    assert parent() == 2
    assert runs == {"login": 2, "echo": 1, "last": 2}  # the child's result (1) replays
    data = b"".join(Path(d, f).read_bytes() for d, _, fs in os.walk(store) for f in fs)
    assert b"8d1e5c-child" not in data
