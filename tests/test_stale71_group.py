"""A workflow called again in the process where its last call ran, its
body having filled a global (`set_rate(rate)` storing into RATES) that a
step reached from the one the body calls, or a helper of a step, reads:
through steps calling each other (`rated` and `halved`, counted by one
digest of their group, `stepgraph`), a step calling another (`chained`
calling `scaled`), or a helper (`helped` calling `scale`). The filled
contents changed that digest, the calling step's stamp of the other, or
the helper's part, so the same-process tolerance
(`definition._only_filled`), which took a change of contents only in the
step's own `now:` parts, refused the call ('rated: the contents of RATES
changed; step halved changed'; 'helped: helper scale changed'), where a
call in a new process replays. A stamp now carries what it is without
those contents (`Fingerprint.stamps`), a helper's parts are read as said
beside it, and a change of anything else still counts."""

from __future__ import annotations

import json

import pytest

import durable
from durable._core.definition import Definition, _only_filled

RATES: dict[str, int] = {}
OTHER: dict[str, int] = {}
SEEN: list[str] = []


def reset() -> None:
    RATES.clear()
    OTHER.clear()


reset()  # a module-level call changing them in place: they count by their contents


def set_rate(rate: int) -> None:
    RATES["k"] = rate


@durable.step
def rated(n: int) -> int:
    SEEN.append("rated")
    return n * RATES["k"] if n <= 10 else halved(n // 2)


@durable.step
def halved(n: int) -> int:
    SEEN.append("halved")
    return rated(n) + OTHER.get("k", 0)


@durable.step
def chained(n: int) -> int:
    SEEN.append("chained")
    return scaled(n)


@durable.step
def scaled(n: int) -> int:
    SEEN.append("scaled")
    return n * RATES["k"] + OTHER.get("k", 0)


def scale(n: int) -> int:
    return n * RATES["k"] + OTHER.get("k", 0)


@durable.step
def helped(n: int) -> int:
    SEEN.append("helped")
    return scale(n)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SEEN.clear()
    reset()


def flows(store: durable.Store) -> tuple[durable.Workflow[[int], int], durable.Workflow[[int], int]]:
    @durable.workflow(run_id="g1", store=store)
    def grouped(rate: int) -> int:
        set_rate(rate)
        return rated(10)

    @durable.workflow(run_id="c1", store=store)
    def chain(rate: int) -> int:
        set_rate(rate)
        return chained(10)

    return grouped, chain


def helping(store: durable.Store) -> durable.Workflow[[int], int]:
    @durable.workflow(run_id="h1", store=store)
    def through_helper(rate: int) -> int:
        set_rate(rate)
        return helped(10)

    return through_helper


def test_steps_reaching_each_other_called_again_in_the_same_process_replay(store: durable.Store) -> None:
    grouped, chain = flows(store)
    assert grouped(2) == 20 and chain(2) == 20
    assert grouped(2) == 20  # was: refused, "rated: the contents of RATES changed; step halved changed"
    assert chain(2) == 20  # was: refused, "chained: step scaled changed"
    assert grouped(2) == 20 and chain(2) == 20
    assert SEEN == ["rated", "chained", "scaled"]


def test_a_step_whose_helper_reads_what_the_body_filled_called_again_replays(store: durable.Store) -> None:
    through_helper = helping(store)
    assert through_helper(2) == 20
    assert through_helper(2) == 20  # was: refused, "helped: helper scale changed (the contents of RATES changed)"
    OTHER["k"] = 5  # read by `scale`, filled by no body: running gives 25 now
    with pytest.raises(durable.DefinitionChangedError, match="scale"):
        through_helper(2)
    del OTHER["k"]
    assert through_helper(2) == 20
    assert SEEN == ["helped"]


def test_a_change_of_what_a_reached_step_reads_still_counts(store: durable.Store) -> None:
    grouped, chain = flows(store)
    assert grouped(2) == 20 and chain(2) == 20
    OTHER["k"] = 5  # read by `halved` and `scaled`, filled by no body: running `chain` gives 25 now
    with pytest.raises(durable.DefinitionChangedError, match="halved"):
        grouped(2)
    with pytest.raises(durable.DefinitionChangedError, match="scaled"):
        chain(2)
    del OTHER["k"]
    assert grouped(2) == 20 and chain(2) == 20
    assert SEEN == ["rated", "chained", "scaled"]


def _defined(stamp: str, bare: str, held: dict[str, str]) -> Definition:
    parts = {"a": {"code": "c", "step:m.b": stamp}}
    stamps = {"a": {"step:m.b": (stamp, bare, held)}}
    return Definition(stamp, {"a": stamp}, parts, {1: stamp}, stamps=stamps)


@pytest.mark.parametrize(
    ("bare", "held", "only"),
    [
        ("same", {"m.b\0now:RATES": "2"}, True),  # the contents the body filled
        ("same", {"m.b\0now:OTHER": "2"}, False),  # another global's
        ("edited", {"m.b\0now:RATES": "1"}, False),  # the reached step's code, or anything else of it
        ("same", {"m.b\0now:RATES": "2", "m.c\0const:K": "1"}, False),  # a constant it reads, added
    ],
)
def test_a_stamp_differs_only_in_filled_contents_when_all_else_of_it_is_equal(
    bare: str, held: dict[str, str], only: bool
) -> None:
    start = _defined("s1", "same", {"m.b\0now:RATES": "1", "m.b\0now:OTHER": "1"})
    now = _defined("s2", bare, {"m.b\0now:OTHER": "1", **held})
    assert _only_filled(start, now, {"RATES"}) is only
    assert not _only_filled(Definition("s1", {"a": "s1"}, start.parts, {1: "s1"}), now, {"RATES"})  # none kept


@pytest.mark.parametrize(
    ("said", "only"),
    [
        ({"code": "c", "now:RATES": "2"}, True),
        ({"code": "d", "now:RATES": "2"}, False),  # the helper's code
        ({"code": "c", "now:RATES": "1", "now:OTHER": "2"}, False),  # another global it reads
        (None, False),  # not said (two helpers of one name)
    ],
)
def test_a_helper_differs_only_in_filled_contents_when_its_said_parts_say_so(
    said: dict[str, str] | None, only: bool
) -> None:
    def defined(value: str, parts: dict[str, str] | None) -> Definition:
        told = {"said:helper:m.f": json.dumps(parts)} if parts is not None else {}
        return Definition(value, {"a": value}, {"a": {"helper:m.f": value, **told}}, {1: value})

    start = defined("s1", {"code": "c", "now:RATES": "1"})
    assert _only_filled(start, defined("s2", said), {"RATES"}) is only
