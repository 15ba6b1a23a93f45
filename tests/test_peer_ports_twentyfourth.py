"""A twenty-fourth round of the peers' own test cases, on the identity of
a call given a value that is awkward to digest (joblib's
test_hashing.py, whose hash must tell apart what a function can tell
apart; DBOS's and PraisonAI's error handling, where a workflow catches a
step's failure and hands the exception to the next step: a reflection,
a report, an agent told why its tool failed). Found here:
- an exception's digest changed once it had been read: its reduction
  names its instance dict only once something made it, and the digest
  itself did. A step given a caught exception was "changed an object it
  was given" with a warning, and the resumed run refused at it (under
  "rerun": the step ran again);
- an exception was digested by its type, arguments and attributes only:
  its chain (`raise ... from`, the error being handled when it was
  raised) and where it was raised did not count, though the step reads
  them (`traceback.format_exception(err)`, `err.__cause__`). A resumed
  run whose tool failed for another reason replayed the report of the
  first failure;
- a method bound at run time (`types.MethodType(make_style(tone), agent)`,
  an agent's behaviour chosen when it is made) was digested as pickle
  names it, by its instance and name: the function it runs, and what its
  closure holds, did not count, so another agent's derived run id was the
  first's, and a cached step was served the first agent's reply.
Earlier rounds in tests/test_peer_ports*.py. In-process: executions are
counted by the step bodies."""

from __future__ import annotations

import enum
import threading
import traceback
import types
from collections.abc import Callable
from pathlib import Path

import pytest

import durable
from durable._core.identity import is_token, value_digest


class ToolError(Exception):
    pass


def _failed(cause: BaseException | None, *, context: bool = False) -> ToolError:
    """A tool's failure, raised from `cause` (or while handling it)."""
    try:
        try:
            if cause is not None:
                raise cause
        except Exception as e:
            if context:
                raise ToolError("search failed")  # noqa: B904 - the implicit chain is the point
            raise ToolError("search failed") from e
        raise ToolError("search failed")
    except ToolError as err:
        return err


def _raised_here() -> ToolError:
    try:
        raise ToolError("search failed")
    except ToolError as err:
        return err


def _raised_there() -> ToolError:
    try:
        raise ToolError("search failed")
    except ToolError as err:
        return err


def test_joblib_hash_tells_apart_exceptions_a_step_tells_apart() -> None:
    """Each pair differs in what `traceback.format_exception` shows."""
    pairs = [
        (_failed(TimeoutError("slow")), _failed(ConnectionRefusedError("down"))),  # the cause
        (_failed(TimeoutError("slow")), _failed(TimeoutError("slow"), context=True)),  # from, or during
        (_failed(KeyError("k"), context=True), _failed(KeyError("j"), context=True)),  # the context
        (_raised_here(), _raised_there()),  # where it was raised
    ]
    for a, b in pairs:
        shown = ["".join(traceback.format_exception(e)) for e in (a, b)]
        assert shown[0] != shown[1]
        da, db = value_digest(a), value_digest(b)
        assert da != db or is_token(da), shown


def test_joblib_hash_of_one_exception_is_reproducible() -> None:
    """An exception raised again by the same code, for the same cause,
    has one digest: a resumed run replays the step it was given to."""
    first, again = (_failed(TimeoutError("slow")) for _ in range(2))
    assert value_digest(first) == value_digest(again)
    assert not is_token(value_digest(first))


def test_joblib_hash_of_an_exception_is_the_same_read_again() -> None:
    err = _failed(TimeoutError("slow"))
    assert value_digest(err) == value_digest(err)


def _agent(tmp_path: Path, causes: list[OSError], **options: str) -> tuple[durable.Workflow[[str], str], list[str]]:
    """DBOS/PraisonAI: the agent's tool fails, the workflow hands the error
    to `report` and goes on; the step after it fails once (the run is left
    to resume)."""
    reports: list[str] = []
    sent: list[str] = []

    @durable.step
    def search(q: str) -> str:
        try:
            raise causes.pop(0)
        except OSError as e:
            raise ToolError(f"search {q} failed") from e

    @durable.step
    def report(err: ToolError) -> str:
        reports.append(repr(err.__cause__))
        return f"{err}: {err.__cause__!r}"

    @durable.step
    def send(text: str) -> str:
        sent.append(text)
        if len(sent) == 1:
            raise RuntimeError("mail server down")
        return text

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="agent", **options)
    def agent(q: str) -> str:
        try:
            found = search(q)
        except ToolError as err:
            found = report(err)
        return send(found)

    return agent, reports


@pytest.mark.filterwarnings("error")
def test_dbos_a_resumed_run_given_the_same_failure_replays_its_report(tmp_path: Path) -> None:
    """Resumed, the tool fails again the same way: the report is replayed
    (it was refused: "report changed an object it was given")."""
    agent, reports = _agent(tmp_path, [TimeoutError("slow"), TimeoutError("slow")])
    with pytest.raises(RuntimeError, match="mail server down"):
        agent("x")
    assert agent("x") == "search x failed: TimeoutError('slow')"
    assert reports == ["TimeoutError('slow')"]


def test_dbos_a_resumed_run_whose_tool_failed_for_another_reason_reports_it_again(tmp_path: Path) -> None:
    """Resumed, the tool fails again for another reason: the report of the
    first failure was replayed (digested without its cause)."""
    causes: list[OSError] = [TimeoutError("slow"), ConnectionRefusedError("down")]
    agent, reports = _agent(tmp_path, causes, on_change="rerun")
    with pytest.raises(RuntimeError, match="mail server down"):
        agent("x")
    assert agent("x") == "search x failed: ConnectionRefusedError('down')"  # was TimeoutError('slow')
    assert reports == ["TimeoutError('slow')", "ConnectionRefusedError('down')"]


class Agent:
    def __init__(self, name: str) -> None:
        self.name = name

    def respond(self, text: str) -> str:
        return f"{self.name}: {text}"


def _style(tone: str) -> Callable[[Agent, str], str]:
    def respond(self: Agent, text: str) -> str:
        return f"{self.name} ({tone}): {text}"

    return respond


def _agent_styled(tone: str) -> Agent:
    """PraisonAI's agents given their behaviour when made: the method bound
    to the instance at run time."""
    agent = Agent("helper")
    agent.respond = types.MethodType(_style(tone), agent)  # type: ignore[method-assign]
    return agent


def test_joblib_hash_tells_apart_methods_bound_at_run_time() -> None:
    formal, casual = _agent_styled("formal"), _agent_styled("casual")
    assert formal.respond("hi") != casual.respond("hi")
    assert value_digest(formal.respond) != value_digest(casual.respond)
    assert value_digest(formal) != value_digest(casual)
    plain = Agent("helper")
    assert value_digest(formal.respond) != value_digest(plain.respond)
    assert value_digest(_agent_styled("formal")) == value_digest(formal)  # and the same for the same


def test_praisonai_an_agent_styled_at_run_time_is_not_served_anothers_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    replies: list[str] = []

    @durable.step(cache=True)
    def reply(agent: Agent, text: str) -> str:
        replies.append(text)
        return agent.respond(text)

    @durable.workflow
    def chat(agent: Agent, text: str) -> str:
        return reply(agent, text)

    assert chat(_agent_styled("formal"), "hi") == "helper (formal): hi"
    assert chat(_agent_styled("formal"), "hi") == "helper (formal): hi"  # the same run, completed
    assert chat(_agent_styled("casual"), "hi") == "helper (casual): hi"  # was the formal one's run
    assert reply(_agent_styled("shy"), "hi") == "helper (shy): hi"  # was a cache hit
    assert replies == ["hi", "hi", "hi"]


class Limited:
    """An agent whose limits sit beside the lock guarding them, which its
    pickling hook leaves out (the lock cannot be pickled)."""

    def __init__(self, max_tokens: int) -> None:
        self.name = "helper"
        self.limits: dict[str, object] = {"max_tokens": max_tokens, "lock": threading.Lock()}
        self.history: list[object] = [max_tokens, threading.Lock()]

    def __getstate__(self) -> dict[str, object]:
        return {"name": self.name}


def test_joblib_hash_counts_the_data_beside_a_lock_a_hook_leaves_out() -> None:
    assert value_digest(Limited(5)) != value_digest(Limited(6))
    assert value_digest(Limited(5)) == value_digest(Limited(5))  # the locks by type
    one, other = Limited(5), Limited(5)
    other.history = [5, 5]
    assert value_digest(one) != value_digest(other)


def test_praisonai_an_agents_limits_beside_a_lock_are_not_served_anothers_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    ran: list[object] = []

    @durable.step(cache=True)
    def answer(agent: Limited, q: str) -> str:
        ran.append(agent.limits["max_tokens"])
        return q[: int(agent.limits["max_tokens"])]  # type: ignore[call-overload]

    assert answer(Limited(3), "question") == "que"
    assert answer(Limited(3), "question") == "que"
    assert answer(Limited(5), "question") == "quest"  # was "que", a hit
    assert ran == [3, 5]


def _labels(names: list[str]) -> type[enum.Enum]:
    return enum.Enum("Labels", names)  # type: ignore[return-value]


def _schema(*labels: str) -> type:
    pydantic = pytest.importorskip("pydantic")
    from typing import Literal

    return pydantic.create_model("Answer", label=(Literal[labels], ...))  # type: ignore[no-any-return]


def test_joblib_hash_tells_apart_classes_made_at_run_time() -> None:
    assert value_digest(_labels(["spam", "ham"])) != value_digest(_labels(["spam", "eggs"]))
    assert value_digest(_labels(["spam", "ham"])) == value_digest(_labels(["spam", "ham"]))
    assert value_digest(_schema("a", "b")) != value_digest(_schema("a", "c"))
    assert value_digest(_schema("a", "b")) == value_digest(_schema("a", "b"))


def test_praisonai_structured_output_with_another_schema_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PraisonAI's `output_pydantic=`, LangChain's `with_structured_output`:
    the schema made from the run's settings, handed to the step asking."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    asked: list[list[str]] = []

    @durable.step(cache=True)
    def classify(text: str, labels: type[enum.Enum]) -> str:
        asked.append([m.name for m in labels])
        return f"{text}: one of {'/'.join(m.name for m in labels)}"

    assert classify("mail", _labels(["spam", "ham"])) == "mail: one of spam/ham"
    assert classify("mail", _labels(["spam", "ham"])) == "mail: one of spam/ham"
    assert classify("mail", _labels(["spam", "eggs"])) == "mail: one of spam/eggs"  # was spam/ham
    assert asked == [["spam", "ham"], ["spam", "eggs"]]


def _settings(text: str) -> types.ModuleType:
    """A settings file loaded as config loaders do (Flask's `from_pyfile`,
    Sphinx's conf.py): executed into a module made for it."""
    module = types.ModuleType("settings")
    exec(text, module.__dict__)
    return module


def test_joblib_hash_tells_apart_modules_made_at_run_time() -> None:
    assert value_digest(_settings("RATE = 2")) != value_digest(_settings("RATE = 3"))
    assert value_digest(_settings("RATE = 2")) == value_digest(_settings("RATE = 2"))
    assert value_digest(types) == value_digest(types)  # a library's, by name


def test_prefect_inputs_policy_tells_apart_settings_loaded_at_run_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect's INPUTS cache policy: another input is another key."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    ran: list[int] = []

    @durable.step(cache=True)
    def price(settings: types.ModuleType, amount: int) -> int:
        ran.append(amount)
        return int(settings.RATE * amount)

    assert price(_settings("RATE = 2"), 10) == price(_settings("RATE = 2"), 10) == 20
    assert price(_settings("RATE = 3"), 10) == 30  # was 20, a hit
    assert ran == [10, 10]
