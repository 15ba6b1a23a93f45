"""The step cache (issue 16): reuse across runs and plain calls, and what a
key is made of. Every test counts executions of the step body."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest

import durable
from durable.testing import FakeClock, memory_store

CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def plain_store(monkeypatch: pytest.MonkeyPatch) -> durable.Store:
    """Plain calls cache in $DURABLE_STORE: a fresh memory store per test."""
    url = f"memory://cache-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("DURABLE_STORE", url)
    CALLS.clear()
    return durable.open_store(url)


@durable.step(cache=True)
def square(x: int) -> tuple[int, int]:
    CALLS["square"] += 1
    return (x, x * x)


def test_a_plain_call_is_computed_once_and_keeps_its_type() -> None:
    assert square(3) == (3, 9)
    again = square(3)
    assert again == (3, 9) and type(again) is tuple
    assert square(x=3) == (3, 9)  # bound arguments: the same call
    assert CALLS["square"] == 1
    square(4)
    assert CALLS["square"] == 2


def test_any_run_of_any_workflow_reuses_the_output(plain_store: durable.Store) -> None:
    store = plain_store

    @durable.workflow(store=store)
    def first(n: int) -> int:
        return square(n)[1] + 1

    @durable.step
    def flaky() -> None:
        CALLS["flaky"] += 1
        if CALLS["flaky"] == 1:
            raise RuntimeError("first attempt fails")

    @durable.workflow(store=store)
    def second(n: int) -> int:
        value = square(n)[1] * 2
        flaky()
        return value

    assert first(5) == 26
    with pytest.raises(RuntimeError):
        second(5)
    assert square(5) == (5, 25)  # and a plain call
    assert CALLS["square"] == 1
    # The run recorded position 0 (served from the cache): the resume replays it.
    run = second.run(5)
    assert (run.value, run.steps_replayed, run.steps_executed) == (50, 1, 1)
    assert CALLS["square"] == 1
    step = second.history(run.run_id)[1]
    assert (step.name, step.status, step.preview) == ("square", "completed", "(5, 25)")


def test_a_large_output_is_stored_once_and_the_run_points_at_it() -> None:
    store = memory_store(blob_threshold=64)

    @durable.step(cache=True)
    def big(n: int) -> bytes:
        CALLS["big"] += 1
        return bytes(range(256)) * n

    @durable.workflow(store=store)
    def flow(n: int, fail: bool) -> int:
        size = len(big(n))
        if fail:
            raise RuntimeError("after the cached step")
        return size

    assert flow.with_options(run_id="a").run(4, False).value == 1024
    with pytest.raises(RuntimeError):
        flow.with_options(run_id="b")(4, True)
    assert CALLS["big"] == 1
    blobs = [k for k in store.list("") if "/blobs/" in k]
    assert len(blobs) == 1 and blobs[0].startswith("cache/shared/blobs/")
    # Run b replays its own record, which points at the cache's copy.
    resumed = flow.resume("b", fail=False)
    assert (resumed.value, resumed.steps_replayed, CALLS["big"]) == (1024, 1, 1)


def test_ignored_arguments_are_left_out_of_the_key() -> None:
    @durable.step(cache=durable.Cache(ignore=("verbose",)))
    def load(path: str, verbose: bool = False) -> str:
        CALLS["load"] += 1
        return path.upper()

    assert load("a", verbose=True) == "A"
    assert load("a") == "A"
    assert load("a", False) == "A"
    assert CALLS["load"] == 1
    assert load("b", verbose=True) == "B"
    assert CALLS["load"] == 2


def test_ignore_must_name_parameters() -> None:
    with pytest.raises(durable.ConfigurationError, match="'verbos', which is not a parameter"):

        @durable.step(cache=durable.Cache(ignore="verbos"))
        def load(path: str, verbose: bool = False) -> str:
            return path


def test_an_ignored_name_given_through_kwargs_is_left_out_of_the_key() -> None:
    @durable.step(cache=durable.Cache(ignore=("verbose",)))
    def load(day: str, **options: object) -> str:
        CALLS["load"] += 1
        return f"{day} {sorted(k for k in options if k != 'verbose')}"

    assert load("d", verbose=True) == load("d", verbose=False) == load("d") == "d []"
    assert CALLS["load"] == 1
    assert load("d", fmt="csv", verbose=True) == "d ['fmt']"  # other options still count
    assert load("d", fmt="csv") == "d ['fmt']"
    assert CALLS["load"] == 2


def test_a_key_function_replaces_the_arguments() -> None:
    @durable.step(cache=durable.Cache(key=lambda doc: doc["id"]))
    def summarize(doc: dict[str, str]) -> str:
        CALLS["summarize"] += 1
        return doc["text"][:3]

    assert summarize({"id": "7", "text": "hello"}) == "hel"
    assert summarize({"id": "7", "text": "other"}) == "hel"  # the user's key says: same
    assert summarize({"id": "8", "text": "other"}) == "oth"
    assert CALLS["summarize"] == 2


def test_an_edited_key_function_never_serves_the_old_keys_entries(
    plain_store: durable.Store,
) -> None:
    """The key function's code is part of the key: an entry stored under
    `x` (for x=4) is not what `x // 2` means by the key 4 (x=8 or 9)."""

    def by_value(x: int) -> int:
        return x

    def by_half(x: int) -> int:
        return x // 2

    def make(key: Any) -> durable.Step[[int], int]:
        @durable.step(cache=durable.Cache(key=key), name="tens")
        def tens(x: int) -> int:
            CALLS["tens"] += 1
            return x * 10

        return tens

    assert make(by_value)(4) == 40
    assert make(by_half)(8) == 80  # not the entry of x=4
    assert make(by_half)(9) == 80  # the new key's own sharing still holds
    assert make(by_value)(4) == 40
    assert CALLS["tens"] == 2


def test_a_key_function_without_source_leaves_the_step_uncached() -> None:
    namespace: dict[str, Any] = {}
    exec("key = lambda x: x", namespace)  # no source to fingerprint

    @durable.step(cache=durable.Cache(key=namespace["key"]))
    def echo(x: int) -> int:
        CALLS["echo"] += 1
        return x

    with pytest.warns(UserWarning, match=r"Cache\(key=\.\.\.\) function of step .*echo"):
        assert echo(1) == 1
    with pytest.warns(UserWarning, match="ran without its cache"):
        assert echo(1) == 1
    assert CALLS["echo"] == 2


def test_a_key_function_returning_none_is_a_configuration_error(
    plain_store: durable.Store,
) -> None:
    def key_of(doc: dict[str, int]) -> None:
        doc.get("id")  # no `return`: every call would share one entry

    @durable.step(cache=durable.Cache(key=key_of))
    def summarise(doc: dict[str, int]) -> int:
        CALLS["summarise"] += 1
        return doc["id"]

    @durable.workflow(store=plain_store)
    def flow(n: int) -> int:
        return summarise({"id": n})

    with pytest.raises(durable.ConfigurationError, match=r"of step .*summarise returned None"):
        summarise({"id": 1})
    with pytest.raises(durable.ConfigurationError, match="must return the key"):
        flow(2)
    assert CALLS["summarise"] == 0 and plain_store.list("cache/") == []


def test_a_keyed_call_that_does_not_match_the_signature_fails_as_uncached() -> None:
    @durable.step(cache=durable.Cache(key=lambda *a, **k: a[0] if a else k.get("x")))
    def tenfold(x: int) -> int:
        CALLS["tenfold"] += 1
        return x * 10

    assert tenfold(1) == 10
    for call in (lambda: tenfold(1, 2, 3), lambda: tenfold(1, bogus=9)):  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"step .*tenfold\(x.* cannot be called with these"):
            call()
    assert CALLS["tenfold"] == 1


def test_a_key_function_gets_the_call_as_bound_so_a_name_given_by_keyword_counts() -> None:
    # Called as given, it got tenfold(x=2)'s 2 in **k and keyed it () as
    # tenfold(x=1): the second call returned 10.
    keys: list[tuple[Any, ...]] = []

    def positional(*a: Any, **k: Any) -> tuple[Any, ...]:
        keys.append(a)
        return a

    @durable.step(cache=durable.Cache(key=positional))
    def tenfold(x: int, *, scale: int = 1) -> int:
        CALLS["tenfold"] += 1
        return x * 10 * scale

    assert (tenfold(x=1), tenfold(x=2), tenfold(2), tenfold(1)) == (10, 20, 20, 10)
    assert keys == [(1,), (2,), (2,), (1,)] and CALLS["tenfold"] == 2


def test_expire_takes_a_timedelta_or_a_positive_number_only() -> None:
    for seconds, expire in ((5.0, 5), (0.5, 0.5), (60.0, timedelta(minutes=1))):
        assert durable.Cache(expire=expire).seconds == seconds
    for bad in (True, "7d", b"5", [1], 0, -1, float("nan"), timedelta(0)):
        with pytest.raises(durable.ConfigurationError, match=r"Cache\(expire=\.\.\.\)"):
            durable.Cache(expire=bad)  # type: ignore[arg-type]


def test_expire_bounds_an_entrys_age(clock: FakeClock) -> None:
    @durable.step(cache=durable.Cache(expire=timedelta(hours=1)))
    def rate(pair: str) -> float:
        CALLS["rate"] += 1
        return 1.1

    rate("EURUSD")
    clock.now += 3599
    rate("EURUSD")
    assert CALLS["rate"] == 1
    clock.now += 2
    rate("EURUSD")
    assert CALLS["rate"] == 2
    rate("EURUSD")  # the fresh entry replaced the expired one
    assert CALLS["rate"] == 2


def test_a_changed_fingerprint_is_a_miss(plain_store: durable.Store) -> None:
    def make(offset: int) -> durable.Step[[int], int]:
        @durable.step(cache=True, name="shift")
        def shift(x: int) -> int:
            CALLS["shift"] += 1
            return x + offset

        return shift

    assert make(1)(1) == 2
    assert make(1)(1) == 2
    assert make(2)(1) == 3  # the closure value is part of the code that runs
    assert CALLS["shift"] == 2
    assert len(plain_store.list("cache/entries/shift/")) == 2


def test_secrets_never_enter_the_cache(plain_store: durable.Store) -> None:
    @durable.step(cache=True)
    def call_api(token: durable.Redacted[str], q: str) -> str:
        CALLS["api"] += 1
        return f"{q}:{len(token.value)}"

    @durable.step(cache=True)
    def get_token(user: str) -> durable.Redacted[str]:
        CALLS["token"] += 1
        return durable.redact("s3cret-" + user)

    deep: list[object] = [durable.redact("x")]
    for _ in range(20):  # deeper than any shallow scan
        deep = [deep]

    @durable.step(cache=True)
    def nested(arg: object) -> int:
        CALLS["nested"] += 1
        return 1

    for _ in range(2):
        assert call_api(durable.redact("abc"), "q") == "q:3"
        assert get_token("ann").value == "s3cret-ann"
        assert nested(deep) == 1
    assert CALLS == {"api": 2, "token": 2, "nested": 2}
    assert plain_store.list("cache/") == []


def test_a_secret_is_never_cached_by_a_key_function_or_when_ignored(
    plain_store: durable.Store,
) -> None:
    """The key leaves the secret out, the output may not: a call holding
    one runs every time and keeps nothing, in a plain call or a run."""

    @dataclass
    class Client:
        token: durable.Redacted[str]

    @durable.step(cache=durable.Cache(key=lambda token, q: q))
    def keyed(token: object, q: str) -> str:
        CALLS["keyed"] += 1
        return f"{q} as {getattr(token, 'value', token)}"

    @durable.step(cache=durable.Cache(ignore=("token",)))
    def ignored(token: object, q: str) -> str:
        CALLS["ignored"] += 1
        return f"{q} as {token}"

    @durable.step(cache=durable.Cache(ignore=("options",)))
    def spread(q: str, **options: object) -> str:
        CALLS["spread"] += 1
        return q

    @durable.workflow(store=plain_store)
    def flow(secret: str) -> str:
        return keyed(durable.redact(secret), "q")

    secret = durable.redact("s3cret")
    for user in ("alice", "bob"):
        assert keyed(durable.redact(user), "q") == f"q as {user}"
        assert keyed(q="q", token=durable.redact(user)) == f"q as {user}"
        for token in (durable.redact(user), [durable.redact(user)], Client(durable.redact(user))):
            ignored(token, "q")
        ignored(lambda: secret.value, "q")  # a closure holding one (pickling refuses it)
        assert spread("q", auth=durable.redact(user)) == "q"
        assert flow(user) == f"q as {user}"
    assert CALLS == {"keyed": 6, "ignored": 8, "spread": 2}
    assert plain_store.list("cache/") == []
    # Without a secret the same steps are cached, an ignored lock included.
    import threading

    assert keyed("t", "q") == keyed("u", "q") == "q as t"
    assert ignored(threading.Lock(), "q") == ignored(None, "q")
    assert CALLS == {"keyed": 7, "ignored": 9, "spread": 2}


def test_persist_false_and_cache_is_a_configuration_error() -> None:
    with pytest.raises(durable.ConfigurationError, match="persist=False"):

        @durable.step(cache=True, persist=False)
        def secret() -> str:
            return "x"


def test_an_argument_without_a_digest_runs_every_time(plain_store: durable.Store) -> None:
    import threading

    @durable.step(cache=True)
    def guarded(lock: object, n: int) -> int:
        CALLS["guarded"] += 1
        return n

    lock = threading.Lock()
    assert guarded(lock, 1) == guarded(lock, 1) == 1
    assert CALLS["guarded"] == 2
    assert plain_store.list("cache/") == []


def test_an_array_in_another_memory_order_is_another_call() -> None:
    import numpy as np

    @durable.step(cache=True)
    def flat(a: np.ndarray) -> list[int]:
        CALLS["flat"] += 1
        return list(a.reshape(-1, order="A").tolist())

    c = np.arange(6).reshape(2, 3)
    assert flat(c) == [0, 1, 2, 3, 4, 5]
    assert flat(np.asfortranarray(c)) == [0, 3, 1, 4, 2, 5]  # was the C array's
    assert flat(c[:, ::-1]) == [2, 1, 0, 5, 4, 3]
    assert flat(np.ascontiguousarray(c[:, ::-1])) == [2, 1, 0, 5, 4, 3]
    assert flat(np.asfortranarray(c)) == [0, 3, 1, 4, 2, 5]  # a hit
    assert CALLS["flat"] == 4


def test_a_date_index_with_another_frequency_is_another_call() -> None:
    """A business-day and a calendar-day index of the same Monday and
    Tuesday: `shift(5)` steps by the frequency, which the digest left out,
    so the calendar-day call was served the business days' dates."""
    import pandas as pd

    @durable.step(cache=True)
    def later(index: pd.DatetimeIndex, n: int) -> list[str]:
        CALLS["later"] += 1
        return [str(t.date()) for t in index.shift(n)]

    days = ["2024-01-01", "2024-01-02"]
    business, calendar = pd.DatetimeIndex(days, freq="B"), pd.DatetimeIndex(days, freq="D")
    assert later(business, 5) == ["2024-01-08", "2024-01-09"]
    assert later(calendar, 5) == ["2024-01-06", "2024-01-07"]  # was the business days'
    assert later(pd.DatetimeIndex(days, freq="D"), 5) == ["2024-01-06", "2024-01-07"]  # a hit
    assert CALLS["later"] == 2


def test_a_multiindex_with_other_levels_is_another_call() -> None:
    """A MultiIndex sliced from a longer one keeps the levels it no longer
    uses (and `levels` may be in any order): the same rows, other
    `levels`, which the digest left out, so the call was served the
    longer index's levels."""
    import pandas as pd

    @durable.step(cache=True)
    def firsts(index: pd.MultiIndex) -> list[int]:
        CALLS["firsts"] += 1
        return list(index.levels[0])

    rows = [(1, "a"), (2, "b")]
    sliced = pd.MultiIndex.from_tuples([*rows, (3, "c")])[:2]
    assert firsts(sliced) == [1, 2, 3]
    assert firsts(pd.MultiIndex.from_tuples(rows)) == [1, 2]  # was [1, 2, 3]
    unsorted = pd.MultiIndex(levels=[[2, 1], ["a", "b"]], codes=[[1, 0], [0, 1]])
    assert list(unsorted) == rows
    assert firsts(unsorted) == [2, 1]
    assert firsts(pd.MultiIndex.from_tuples(rows)) == [1, 2]  # a hit
    assert CALLS["firsts"] == 3


class Pricer:
    RATE = 2
    SEEN: ClassVar[list[int]] = []

    def __init__(self, base: int) -> None:
        self.base = base

    @staticmethod
    def rounded(x: int) -> int:
        return x

    def price(self, n: int) -> int:
        return self.rounded(self.base * n * self.RATE)

    @durable.step(cache=True)
    def total(self, n: int) -> int:
        CALLS["total"] += 1
        return self.price(n)


def test_a_method_step_keys_on_the_code_of_its_class() -> None:
    assert Pricer(3).total(2) == Pricer(3).total(2) == 12
    assert CALLS["total"] == 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Pricer, "price", lambda self, n: -n)  # another method: another key
        assert Pricer(3).total(2) == -2
    assert Pricer(3).total(2) == 12 and CALLS["total"] == 2  # the first entry again
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Pricer, "rounded", staticmethod(lambda x: x + 1))
        assert Pricer(3).total(2) == 13
    # A class constant counts as its `class` statement writes it, as a
    # global does: one the program changes as it runs (a class-level cache
    # filled, a value rebound) is not a change of code.
    Pricer.SEEN.append(1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Pricer, "RATE", 10)
        assert Pricer(3).total(2) == 12 and CALLS["total"] == 3


def test_artifacts_are_checked_before_reuse(tmp_path: Path) -> None:
    out = tmp_path / "report.txt"

    @durable.step(cache=True)
    def report(n: int) -> str:
        CALLS["report"] += 1
        out.write_text("x" * n)
        return str(durable.artifact(out))

    report(3)
    report(3)
    assert CALLS["report"] == 1
    out.unlink()  # missing: computed again, and the file is back
    report(3)
    assert CALLS["report"] == 2 and out.read_text() == "xxx"
    out.write_text("changed")
    report(3)
    assert CALLS["report"] == 3
    report(3)
    assert CALLS["report"] == 3


def test_a_damaged_entry_is_a_miss_and_is_replaced(plain_store: durable.Store) -> None:
    square(6)
    [key] = plain_store.list("cache/entries/")
    raw = plain_store.get(key)
    assert raw is not None
    plain_store.put(key, raw[:-1] + bytes([raw[-1] ^ 1]))
    assert square(6) == (6, 36)
    assert square(6) == (6, 36)
    assert CALLS["square"] == 2


def test_cache_info_of_a_step_counts_its_own_entries_not_another_modules_of_its_name(
    plain_store: durable.Store,
) -> None:
    # moda.f's info counted modb.f's entries, hits and misses as its own.
    def made_in(module: str) -> Any:
        def f(x: int) -> int:
            return x + 1

        f.__module__ = module
        return durable.step(cache=True)(f)

    moda, modb = made_in("moda"), made_in("modb")
    assert moda.name == modb.name
    for step, x in ((modb, 1), (modb, 2), (modb, 2), (moda, 1)):
        step(x)
    a, b = durable.cache_info(moda), durable.cache_info(modb)
    assert (a.hits, a.misses, a.entries, b.hits, b.misses, b.entries) == (0, 1, 1, 1, 2, 2)
    assert durable.cache_info(moda.name).entries == 3  # a name: every step of that name


def test_cache_info_counts_hits_misses_and_size(plain_store: durable.Store) -> None:
    @durable.step(cache=True)
    def tally(n: int) -> list[int]:
        return list(range(n))

    before = durable.cache_info(tally)
    for n in (3, 3, 3, 4):
        tally(n)
    info = durable.cache_info(tally)
    assert (info.hits - before.hits, info.misses - before.misses) == (2, 2)
    assert (info.step, info.entries) == (tally.name, 2)
    assert info.size == len(b"\x93\x00\x01\x02") + len(b"\x94\x00\x01\x02\x03")


def test_an_async_step_is_cached_in_plain_calls_and_runs(plain_store: durable.Store) -> None:
    import asyncio

    @durable.step(cache=True)
    async def fetch(n: int) -> int:
        CALLS["fetch"] += 1
        return n * 10

    @durable.workflow(store=plain_store)
    async def flow(n: int) -> int:
        return await fetch(n) + await fetch(n + 1)

    assert asyncio.run(fetch(1)) == 10
    assert asyncio.run(flow(1)) == 30
    assert asyncio.run(fetch(2)) == 20
    assert CALLS["fetch"] == 2


def test_a_workflow_may_not_be_named_cache() -> None:
    with pytest.raises(durable.ConfigurationError, match="reserved"):

        @durable.workflow(name="cache")
        def flow() -> None:
            return None


def test_any_step_name_has_its_own_folder(plain_store: durable.Store) -> None:
    from durable._manage import cache as cache_admin

    names = ["a/b [1]", "a%2Fb [1]", ".hidden", "x" * 300, "x" * 301]
    for name in names:
        durable.step(cache=True, name=name)(lambda: 1)()
    listed = {e.step for e in cache_admin.list_entries(plain_store)}
    assert listed == set(names)
    for name in names:
        [entry] = cache_admin.list_entries(plain_store, name)
        part = entry.key.split("/")[2]
        assert len(part) <= 200 and not part.startswith(".")
        assert not set(part) & set("*?[] /\\")
    gone, _ = cache_admin.clear(plain_store, "a/b [1]")
    assert [g.step for g in gone] == ["a/b [1]"]
    assert len(cache_admin.list_entries(plain_store)) == len(names) - 1


def test_loop_over_items_use_the_cache_in_the_runs_store(plain_store: durable.Store) -> None:
    """A cached step as a loop item, or called by one, in this process (in
    order, on a thread pool, as coroutines): the cache of the run's store,
    not the default store of a plain call (worker threads included)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    store = memory_store()

    def via(x: int) -> int:
        return square(x)[1]

    @durable.step(cache=True)
    async def asquare(x: int) -> int:
        CALLS["asquare"] += 1
        return x * x

    @durable.workflow(store=store)
    def flow(xs: list[int]) -> list[object]:
        with ThreadPoolExecutor(2) as pool:
            return [
                durable.loop_over(square, xs),
                durable.loop_over(square, xs, executor=pool),
                durable.loop_over(via, [x + 10 for x in xs], executor=pool),
                durable.loop_over(via, [x + 10 for x in xs]),
            ]

    @durable.workflow(store=store)
    async def aflow(xs: list[int]) -> list[int]:
        return await durable.loop_over(asquare, xs)

    assert flow([1, 2]) == [[(1, 1), (2, 4)]] * 2 + [[121, 144]] * 2
    assert CALLS["square"] == 4
    assert asyncio.run(aflow([3, 3])) == [9, 9]
    assert 1 <= CALLS["asquare"] <= 2  # the two items of one block may both miss
    before = CALLS["asquare"]
    assert asyncio.run(aflow([3, 4])) == [9, 16]
    assert CALLS["asquare"] == before + 1
    assert len(store.list("cache/entries/")) == 6  # square of 1, 2, 11, 12; asquare of 3, 4
    assert plain_store.list("cache/") == []


def test_a_call_kept_out_of_the_cache_says_why_once_per_step(plain_store: durable.Store) -> None:
    """A secret or an argument without a digest keeps a call out of the
    cache: it runs every time, which is safe but was silent (a cached LLM
    call given its API key ran on every call without a word). Each step
    says so once, naming the argument; a lock left out of the key is no
    reason."""
    import threading

    @durable.step(cache=True)
    def ask(prompt: str, key: object) -> str:
        CALLS["ask"] += 1
        return prompt.upper()

    @durable.step(cache=True)
    def locked(x: int, lock: object) -> int:
        CALLS["locked"] += 1
        return x

    @durable.step(cache=durable.Cache(ignore="lock"))
    def ignoring(x: int, lock: object) -> int:
        CALLS["ignoring"] += 1
        return x

    with pytest.warns(UserWarning) as told:
        for _ in range(3):
            assert ask("hi", durable.redact("sk-1")) == "HI"
            assert locked(1, threading.Lock()) == 1
            assert ignoring(1, threading.Lock()) == 1
    assert CALLS == {"ask": 3, "locked": 3, "ignoring": 1}
    messages = [str(w.message) for w in told if "without its cache" in str(w.message)]
    assert len(messages) == 2, messages
    assert ".ask ran" in messages[0] and "argument 'key' holds a durable.redact()" in messages[0]
    assert ".locked ran" in messages[1] and "argument 'lock' (lock) has no reproducible" in messages[1]
    assert all(w.filename == __file__ for w in told), [w.filename for w in told]


def test_a_cached_step_fanned_out_to_other_processes_says_it_runs_without_its_cache() -> None:
    # A Dask cluster or a process pool runs the items' bodies in workers that
    # do not have the store: cache=True computed every item every time, and
    # nothing said so (a Prefect user's cached task mapped over a cluster).
    import concurrent.futures as cf

    class Elsewhere(cf.Executor):  # hands items over pickled, as to another process
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
            done: cf.Future[Any] = cf.Future()
            done.set_result(fn(*args, **kwargs))
            return done

    @durable.step(cache=True)
    def cube(x: int) -> int:
        return x**3

    with Elsewhere() as pool:
        with pytest.warns(UserWarning, match=r"step .*cube runs without its cache in this loop"):
            assert durable.loop_over(cube, [2, 2], executor=pool) == [8, 8]
        assert durable.cache_info(cube).entries == 0
