"""A twenty-sixth round of the peers' own test cases, on what this round's
merges changed: argument identity (one object held twice), what a
`persist=False` step returned, exceptions. Ported from joblib's
test_hashing.py (numpy views: "a view and its base"), Prefect's INPUTS
cache policy (a mutable input) and result persistence off, DBOS's secrets
handed from step to step. Found here:
- two numpy arrays sharing memory (`[a, a[:2]]`, a view of the array it
  is given with it) were digested as two arrays that do not
  (`[a, a[:2].copy()]`): a step writing into one sees the other change,
  and a cached step was served the other's output; a step's output that
  is a view of the array it was given came back from its record as a
  copy, which the body then changed apart from the array (and which,
  with the above, made a later step given both refused on resume);
- an error a step returned wrapping the one it was given (`raise
  ToolError(...) from err`, `ToolError(msg, [err])`) came back from its
  record holding a copy of it: a later step given both was refused on
  every resume;
- what a `persist=False` step returned was held only through lists,
  tuples, sets and dict values, eight levels deep: a token in a
  dataclass's field, an object's attribute or its `__slots__`, or deeper,
  returned on by another step, was written to the store.
Earlier rounds in tests/test_peer_ports*.py. In-process: executions are
counted by the step bodies."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import durable
from durable._core.identity import is_token, value_digest


def _differ(a: Any, b: Any) -> bool:
    da, db = value_digest(a), value_digest(b)
    return da != db or is_token(da)


# -- numpy views ------------------------------------------------------------------


def test_joblib_hash_tells_apart_a_view_from_a_copy() -> None:
    base = np.arange(6)
    pairs = [
        ([base, base[:2]], [base, base[:2].copy()]),
        ([base[:3], base[1:4]], [base[:3].copy(), base[1:4].copy()]),  # two views overlapping
        ((base, base[::2]), (base, base[::2].copy())),
        ({"a": base.reshape(2, 3), "b": base}, {"a": base.reshape(2, 3).copy(), "b": base}),
        ([base[:2], base[1:3]], [base[:2], base[1:3].copy()]),
    ]
    for shared, apart in pairs:
        assert _differ(shared, apart), shared
    # Where they lie in the array counts: a write through one shows at another place.
    zeros = np.zeros(6)
    assert _differ([zeros, zeros[:2]], [zeros, zeros[2:4]])
    # Reproducible, and what shares nothing stays as it was: `np.split`'s views.
    other = np.arange(6)
    assert value_digest([other, other[:2]]) == value_digest([base, base[:2]])
    assert value_digest(np.split(base, 3)) == value_digest([base[:2].copy(), base[2:4].copy(), base[4:].copy()])
    assert value_digest([base, base]) != value_digest([base, base[:]])  # itself, or a view of all of it
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1, 2], "b": [3, 4]})  # copy-on-write: a column is not a view to a step
    assert value_digest([frame, frame["a"]]) == value_digest([frame.copy(), frame["a"].copy()])


def test_prefect_a_cached_step_tells_apart_a_view_of_its_input_from_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect's INPUTS policy: the second call must not reuse the first's
    result. `plan` tells them apart as numpy's own functions do before
    writing (`np.shares_memory`); the arrays are not changed."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    calls: list[int] = []

    @durable.step(cache=True)
    def plan(data: Any, head: Any) -> str:
        calls.append(1)
        return "copy first" if np.shares_memory(data, head) else "in place"

    @durable.workflow
    def flow(view: bool) -> str:
        data = np.arange(4)
        return plan(data, data[:2] if view else data[:2].copy())

    assert flow(True) == "copy first"
    assert flow(False) == "in place"  # was "copy first": the cached output of the view
    assert flow(True) == "copy first"
    assert len(calls) == 2


def test_dbos_a_view_of_a_steps_input_replays_as_a_view(tmp_path: Path) -> None:
    """DBOS's step outputs passed between steps: `head` returns a view of the
    array its state holds, `parts` `np.split`'s views and a reversed one; `check` is given the
    array with them. Replayed, the views are made again in the replayed
    array (`sharing`), so `check` is the same call and replays, and the
    body sees what it saw live: a write through a view shows in the array."""
    counts = Counter[str]()
    seen: list[tuple[bool, int]] = []

    @durable.step
    def load() -> Any:
        return np.arange(6)

    @durable.step
    def head(state: dict[str, Any]) -> Any:
        counts["head"] += 1
        return state["a"][1:3]

    @durable.step
    def parts(a: Any) -> list[Any]:
        counts["parts"] += 1
        return [*np.split(a, 3), a[::-2], a]  # strided: its record holds a compact copy

    @durable.step
    def check(a: Any, h: Any, p: list[Any]) -> int:
        counts["check"] += 1
        return int(np.shares_memory(a, h)) + sum(np.shares_memory(a, x) for x in p) + 10 * (p[-1] is a)

    @durable.step
    def send(n: int) -> int:
        counts["send"] += 1
        if counts["send"] == 1:
            raise RuntimeError("mail server down")
        return n

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def flow() -> int:
        a = load()
        h, p = head({"a": a}), parts(a)
        n = check(a, h, p)
        h[0] = 100
        seen.append((int(a[1]) == 100, int(p[0][1])))
        return send(n)

    with pytest.raises(RuntimeError, match="mail server down"):
        flow()
    assert flow() == 16
    assert counts == {"head": 1, "parts": 1, "check": 1, "send": 2}
    assert seen == [(True, 100), (True, 100)]


class ToolError(Exception):
    pass


def test_dbos_an_error_wrapping_the_one_a_step_was_given_replays(tmp_path: Path) -> None:
    """DBOS's errors recorded and handed on (PraisonAI's agents report a
    tool's failure): `wrap` raises a `ToolError` from the error it is given
    and returns it, `hold` returns one holding it in its args; `report` is
    given the error with them. Replayed, their chain and args hold the
    given error again (`sharing`), so `report` is the same call and replays."""
    counts = Counter[str]()

    @durable.step
    def search(q: str) -> BaseException:
        try:
            raise TimeoutError(q)
        except TimeoutError as e:
            return e

    @durable.step
    def wrap(err: BaseException) -> BaseException:
        counts["wrap"] += 1
        try:
            raise ToolError("search failed") from err
        except ToolError as e:
            return e

    @durable.step
    def hold(err: BaseException) -> BaseException:
        counts["hold"] += 1
        return ToolError("search failed", [err])

    @durable.step
    def report(err: BaseException, wrapped: BaseException, held: BaseException) -> str:
        counts["report"] += 1
        return f"{wrapped.__cause__ is err} {held.args[1][0] is err}"

    @durable.step
    def send(text: str) -> str:
        counts["send"] += 1
        if counts["send"] == 1:
            raise RuntimeError("mail server down")
        return text

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def flow() -> str:
        err = search("q")
        return send(report(err, wrap(err), hold(err)))

    with pytest.raises(RuntimeError, match="mail server down"):
        flow()
    assert flow() == "True True"  # was refused: report's arguments changed
    assert counts == {"wrap": 1, "hold": 1, "report": 1, "send": 2}


# -- what a persist=False step returned -----------------------------------------------


@dataclasses.dataclass
class Creds:
    user: str
    token: str


class Session:
    def __init__(self, token: str) -> None:
        self.token = token


class Slotted:
    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token


def _deep(token: str) -> Any:
    v: Any = token
    for _ in range(12):
        v = [v]
    return v


def _leaf(v: Any) -> Any:
    while type(v) is list:
        v = v[0]
    return v


MADE: dict[str, tuple[Any, Any]] = {
    "dataclass": (lambda t: Creds("ann", t), lambda c: {"Authorization": c.token}),
    "attribute": (Session, lambda s: [s.token]),
    "slots": (Slotted, lambda s: (s.token,)),
    "deep": (_deep, _leaf),
}


@pytest.mark.parametrize("kind", list(MADE))
def test_dbos_a_secret_held_by_an_object_is_not_written(tmp_path: Path, kind: str) -> None:
    """DBOS's secrets: `login` (persist=False) returns a session holding the
    token; `headers` returns the token on. The token must not reach the
    store, and `headers` runs again on resume (its output was not kept)."""
    wrap, take = MADE[kind]
    token = "-".join(("tok", kind, os.urandom(4).hex()))  # made at run time: no constant holds it
    counts: Counter[str] = Counter()

    @durable.step(name="login", persist=False)
    def login() -> Any:
        counts["login"] += 1
        return wrap(token)

    @durable.step(name="headers")
    def headers(session: Any) -> Any:
        counts["headers"] += 1
        return take(session)

    @durable.step(name="send")
    def send(h: Any) -> int:
        counts["send"] += 1
        if counts["send"] == 1:
            raise RuntimeError("mail server down")
        return 1

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r", name="flow")
    def flow() -> int:
        return send(headers(login()))

    with pytest.raises(RuntimeError, match="mail server down"):
        flow()
    assert flow() == 1
    assert counts == {"login": 2, "headers": 2, "send": 2}
    data = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert data
    assert token.encode() not in data
