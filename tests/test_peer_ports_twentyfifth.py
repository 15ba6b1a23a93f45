"""A twenty-fifth round of the peers' own test cases, on the identity of
a call (joblib's test_hashing.py and test_memory.py: the hash tells apart
what the function can tell apart; Prefect's INPUTS cache policy; DBOS's
and PraisonAI's agents handing a tool's failure on). Found here:
- one object held twice (`[row, row]`, `{"a": cfg, "b": cfg}`) was
  digested as two equal objects (`[row, copy]`): a step that copies
  its input and changes one part (`copy.deepcopy` keeps the sharing)
  returns another value for each, and a cached step was served the
  other's output; a step's output holding one list twice came back
  from its record as two lists (msgpack);
- an exception a step returned came back from its record without its
  chain (`raise ... from`, the error being handled) and where it was
  raised: the next step, given it, was refused as changed on resume,
  and a value the body built from `err.__cause__` was built from None;
- what the C fields of an exception hold beyond its `args`
  (`OSError.errno`, `UnicodeDecodeError.start`, `StopIteration.value`,
  `SyntaxError.lineno` set after it was made) did not count, nor did
  what a `typing.NewType` made at run time stands for (its name, not
  it, is what pickle keeps): a step told them apart, the digest did not.
Earlier rounds in tests/test_peer_ports*.py. In-process: executions are
counted by the step bodies."""

from __future__ import annotations

import copy
import subprocess
import typing
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core.identity import is_token, value_digest
from durable._storage import codec


def _differ(a: Any, b: Any) -> bool:
    da, db = value_digest(a), value_digest(b)
    return da != db or is_token(da)


def _round_trip(value: Any) -> Any:
    return codec.decode_value(*codec.encode_value(value))


# -- one object held twice ------------------------------------------------------


class Settings:
    def __init__(self) -> None:
        self.tags: list[str] = []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self.tags == other.tags

    __hash__ = None  # type: ignore[assignment]


def test_joblib_hash_tells_apart_one_object_held_twice_from_two_equal_ones() -> None:
    row, cfg, buf, obj = [1], {"k": 1}, bytearray(b"x"), Settings()
    pairs = [
        ([row, row], [[1], [1]]),
        ({"a": cfg, "b": cfg}, {"a": {"k": 1}, "b": {"k": 1}}),
        ((buf, buf), (bytearray(b"x"), bytearray(b"x"))),
        ([obj, obj], [Settings(), Settings()]),
        ([[row], row], [[[1]], [1]]),
    ]
    for shared, apart in pairs:
        assert shared == apart  # equal, yet a change to one part tells them apart
        assert _differ(shared, apart), shared
    again = [1]
    assert value_digest([again, again]) == value_digest([row, row])  # reproducible
    t = (1, 2)
    assert value_digest([t, t]) == value_digest([(1, 2), (1, 2)])  # an immutable tuple: no one can tell


def test_joblib_a_step_tells_apart_a_list_held_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefect's INPUTS policy: the second call must not reuse the first's
    result. `copy.deepcopy` keeps the sharing, as a step's copy of its
    configuration does."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    calls: list[int] = []

    @durable.step(cache=True)
    def widen(rows: list[list[str]]) -> list[int]:
        calls.append(1)
        rows = copy.deepcopy(rows)
        rows[0].append("x")
        return [len(r) for r in rows]

    @durable.workflow
    def flow(shared: bool) -> list[int]:
        row: list[str] = []
        return widen([row, row] if shared else [[], []])

    assert flow(True) == [1, 1]
    assert flow(False) == [1, 0]  # was [1, 1]: the cached output of the shared list
    assert len(calls) == 2


def test_dbos_a_list_held_twice_comes_back_from_its_record_held_twice(tmp_path: Path) -> None:
    """The output of `make` replayed holds one list twice, as it did live: the
    body sees the same value, and `count` (given it) is replayed."""
    counts = {"make": 0, "count": 0, "send": 0}
    seen: list[bool] = []

    @durable.step
    def make() -> dict[str, list[int]]:
        counts["make"] += 1
        row = [1]
        return {"a": row, "b": row}

    @durable.step
    def count(rows: dict[str, list[int]]) -> int:
        counts["count"] += 1
        return len(rows)

    @durable.step
    def send(n: int) -> int:
        counts["send"] += 1
        if counts["send"] == 1:
            raise RuntimeError("mail server down")
        return n

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def flow() -> int:
        rows = make()
        seen.append(rows["a"] is rows["b"])
        return send(count(rows))

    with pytest.raises(RuntimeError, match="mail server down"):
        flow()
    assert flow() == 2
    assert counts == {"make": 1, "count": 1, "send": 2}
    assert seen == [True, True]
    held = _round_trip([[1], [2]])
    assert held == [[1], [2]]  # no sharing: plain as before
    row = [1]
    tag, _ = codec.encode_value([row, row], allow_pickle=False)
    assert tag == codec.MSGPACK  # a store without pickle keeps it as before: two lists


def _reviewed(tmp_path: Path, *, copied: bool) -> tuple[durable.Workflow[[], str], dict[str, int]]:
    """LangGraph's state passing: `revise` returns `{**draft, ...}`, which
    holds the draft's list of sources; `reflect` is given both."""
    counts = {"revise": 0, "reflect": 0, "send": 0}

    @durable.step
    def draft() -> dict[str, Any]:
        return {"text": "a", "sources": ["s1"]}

    @durable.step
    def revise(d: dict[str, Any]) -> dict[str, Any]:
        counts["revise"] += 1
        return {**d, "text": "b"}

    @durable.step
    def reflect(before: dict[str, Any], after: dict[str, Any]) -> str:
        counts["reflect"] += 1
        return f"{before['text']}>{after['text']}"

    @durable.step
    def send(text: str) -> str:
        counts["send"] += 1
        if counts["send"] == 1:
            raise RuntimeError("mail server down")
        return text

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def flow() -> str:
        first = draft()
        second = revise(first)
        return send(reflect(first, copy.deepcopy(second) if copied else second))

    return flow, counts


def test_langgraph_state_held_by_two_outputs_resumes(tmp_path: Path) -> None:
    """Live, `reflect` was given one list in both states; replayed, `revise`'s
    output holds `draft`'s list again (the record notes it was a part of its
    argument: `sharing`), so `reflect` is the same call and replays. A deep
    copy where it is made replays too."""
    for copied in (False, True):
        flow, counts = _reviewed(tmp_path / str(copied), copied=copied)
        with pytest.raises(RuntimeError, match="mail server down"):
            flow()
        assert flow() == "a>b"
        assert counts == {"revise": 1, "reflect": 1, "send": 2}


SOURCES: list[str] = ["s1"]


def test_one_list_two_steps_returned_is_refused_on_resume_with_the_way_out(tmp_path: Path) -> None:
    """The cost of counting sharing, where it does not come through the
    arguments: two steps returning one module-level list gave `reflect` one
    list twice; replayed, each output is a copy of its own, which is another
    call (fail closed), and the refusal says why."""
    counts = {"reflect": 0, "send": 0}

    @durable.step
    def sources() -> dict[str, Any]:
        return {"sources": SOURCES}

    @durable.step
    def reflect(before: dict[str, Any], after: dict[str, Any]) -> int:
        counts["reflect"] += 1
        return len(before["sources"]) + len(after["sources"])

    @durable.step
    def send(n: int) -> int:
        counts["send"] += 1
        if counts["send"] == 1:
            raise RuntimeError("mail server down")
        return n

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def flow() -> int:
        return send(reflect(sources(), sources()))

    with pytest.raises(RuntimeError, match="mail server down"):
        flow()
    with pytest.raises(durable.DefinitionChangedError, match=r"was one object when the record was made"):
        flow()
    assert counts == {"reflect": 1, "send": 1}


# -- an exception a step returns ------------------------------------------------


class ToolError(Exception):
    pass


def _failed(q: str, cause: BaseException, *, context: bool = False) -> ToolError:
    try:
        try:
            raise cause
        except OSError as e:
            if context:
                raise ToolError(f"search {q} failed")  # noqa: B904 - the implicit chain is the point
            raise ToolError(f"search {q} failed") from e
    except ToolError as err:
        return err


def test_joblib_an_exception_comes_back_from_its_record_with_its_chain() -> None:
    for err in (_failed("q", TimeoutError("slow")), _failed("q", KeyError("k") and TimeoutError("t"), context=True)):
        back = _round_trip(err)
        assert repr(back.__cause__) == repr(err.__cause__)
        assert repr(back.__context__) == repr(err.__context__)
        assert back.__suppress_context__ == err.__suppress_context__
        assert value_digest(back) == value_digest(err)  # where it was raised too
        assert value_digest(_round_trip(back)) == value_digest(err)  # recorded again
    assert _differ(_round_trip(_failed("q", TimeoutError("slow"))), _failed("q", TimeoutError("other")))


def test_dbos_an_error_a_step_returned_is_handed_on_with_its_cause(tmp_path: Path) -> None:
    """PraisonAI: the tool step returns its failure, the agent reports it
    and mails what it says of its cause. Resumed, `report` was refused as
    changed (its argument came back without its chain), and the mail was
    built from a cause of None."""
    counts = {"attempt": 0, "report": 0}
    sent: list[str] = []

    @durable.step
    def attempt(q: str) -> ToolError:
        counts["attempt"] += 1
        return _failed(q, TimeoutError("slow"))

    @durable.step
    def report(err: ToolError) -> str:
        counts["report"] += 1
        return f"{err}: {err.__cause__!r}"

    @durable.step
    def send(text: str) -> str:
        sent.append(text)
        if len(sent) == 1:
            raise RuntimeError("mail server down")
        return text

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="agent")
    def agent(q: str) -> str:
        err = attempt(q)
        return send(f"{report(err)} (cause: {err.__cause__!r})")

    with pytest.raises(RuntimeError, match="mail server down"):
        agent("x")
    text = "search x failed: TimeoutError('slow') (cause: TimeoutError('slow'))"
    assert agent("x") == text
    assert counts == {"attempt": 1, "report": 1}
    assert sent == [text, text]


# -- what an exception holds beyond its args; NewType ---------------------------


def _decode_error() -> UnicodeDecodeError:
    try:
        b"ab\xff".decode()
    except UnicodeDecodeError as e:
        return e
    raise AssertionError


def test_joblib_hash_tells_apart_what_an_exceptions_fields_hold() -> None:
    def later(make: Any, **fields: Any) -> Any:
        e = make()
        for k, x in fields.items():
            setattr(e, k, x)
        return e

    cases: list[tuple[Any, dict[str, Any]]] = [
        (lambda: OSError(2, "missing"), {"errno": 5}),
        (lambda: OSError(2, "missing", "a.txt"), {"strerror": "gone"}),
        (_decode_error, {"start": 0}),
        (_decode_error, {"reason": "bad"}),
        (lambda: StopIteration(1), {"value": 2}),
        (lambda: SystemExit(1), {"code": 2}),
        (lambda: SyntaxError("m", ("f.py", 1, 2, "x")), {"lineno": 7}),
        (lambda: subprocess.CalledProcessError(1, ["ls"], output=b"a"), {"returncode": 2}),
    ]
    for make, fields in cases:
        a, b = make(), later(make, **fields)
        assert a.args == b.args and any(getattr(a, k) != x for k, x in fields.items())
        assert _differ(a, b), fields
        assert value_digest(make()) == value_digest(a)
        back = _round_trip(b)
        assert all(getattr(back, k) == x for k, x in fields.items()), fields
        assert value_digest(back) == value_digest(b), fields


class Conflict(Exception):
    __slots__ = ("code",)  # pickle keeps only an exception's args and instance dict

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def test_dbos_an_errors_slots_come_back_from_its_record() -> None:
    err = Conflict("taken", 409)
    back = _round_trip(err)
    assert back.code == 409
    assert value_digest(back) == value_digest(err)
    assert _differ(err, Conflict("taken", 412))


def _new_type(base: type) -> Any:
    return typing.NewType("Id", base)


def test_joblib_hash_tells_apart_new_types_made_at_run_time() -> None:
    by_int, by_str = _new_type(int), _new_type(str)
    assert by_int.__supertype__ is not by_str.__supertype__
    assert _differ(by_int, by_str)
    assert value_digest(_new_type(int)) == value_digest(by_int)
    bound_int, bound_str = (typing.TypeVar("T", bound=b) for b in (int, str))  # likewise pickled by name
    assert _differ(bound_int, bound_str)
    UserId = typing.NewType("UserId", int)
    assert value_digest(UserId(5)) == value_digest(5)  # its values are its base's


# -- an error whose __str__ raises ----------------------------------------------


class BrokenText(ValueError):
    """DBOS's test_serialize_exception_for_persistence_broken_str: neither
    its text nor its pickle can be had."""

    def __str__(self) -> str:
        raise RuntimeError("broken __str__")

    def __reduce__(self) -> Any:
        raise TypeError("unpicklable")


def test_dbos_an_error_whose_text_cannot_be_had_is_the_error_raised(tmp_path: Path) -> None:
    """The step's error (and the body's) reaches the caller as itself, the run
    is failed with it in its history, and a resume runs the failed step
    alone again. Its text was taken for the history: the caller got
    "RuntimeError: broken __str__" in its place."""
    counts = {"fetch": 0, "parse": 0}

    @durable.step
    def fetch() -> int:
        counts["fetch"] += 1
        return 1

    @durable.step
    def parse(n: int) -> int:
        counts["parse"] += 1
        if counts["parse"] == 1:
            raise BrokenText("boom")
        return n + 1

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def flow(fail: bool) -> int:
        n = parse(fetch())
        if fail:
            raise BrokenText("body")
        return n

    with pytest.raises(BrokenText):
        flow(False)
    failed = flow.history("r")
    assert [s.status for s in failed][-1] == "failed"
    assert flow(False) == 2
    assert counts == {"fetch": 1, "parse": 2}
    with pytest.raises(BrokenText):
        flow.with_options(restart=True)(True)
    assert [r.status for r in flow.runs()] == ["failed"]


def test_dbos_an_item_error_from_a_worker_process_keeps_its_chain_and_text() -> None:
    """What a process pool's worker sends back for an item that failed: its
    error with its chain, the worker's traceback below it; one that cannot
    travel (nor give its text) as a RuntimeError naming it. Taking its
    text raised in the worker in place of the report."""
    from durable._fanout.executors import _pack_error
    from durable._fanout.outcome import RemoteTraceback, unpack_outcome

    with pytest.raises(ToolError) as caught:
        unpack_outcome(_pack_error(_failed("q", TimeoutError("slow"))))
    cause = caught.value.__cause__
    assert repr(cause) == "TimeoutError('slow')" and cause is not None
    assert isinstance(cause.__cause__, RemoteTraceback)
    assert "TimeoutError: slow" in str(cause.__cause__)
    with pytest.raises(RuntimeError, match=r"BrokenText: <exception str\(\) failed>"):
        unpack_outcome(_pack_error(BrokenText("boom")))
