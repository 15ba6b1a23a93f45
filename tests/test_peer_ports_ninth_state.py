"""The ninth round of the peers' own test cases (see
tests/test_peer_ports_ninth.py): DBOS Transact's
test_simple_workflow_attempts_counter (tests/test_dbos.py), one workflow id
called again and again, by a script whose module-level loop also changes the
list the bodies append to (real processes: what the fingerprint reads is the
script's own module-level statements), and LangGraph's
test_named_tasks_functional (libs/langgraph/tests/test_pregel.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import durable

_SCRIPT = """
import durable
{import_line}

@durable.workflow(run_id="same-id")
def noop() -> None:
    calls.append("noop")


@durable.step(cache=True)
def square(x: int) -> int:
    calls.append("square")
    return x * x


for fn, args, times in [(noop, (), 10), (square, (4,), 10)]:  # what to call, how often
    calls.clear()
    for _ in range(times):
        fn(*args)
    print(len(calls))
"""
# The list the bodies append to: the script's own, or one a module of the
# program holds (and fills at import), bound by `from ... import`.
_LOGS = {"own": "calls = []", "imported": "from events import calls"}
# A body that only writes `calls` but reads a copy of it the loop makes:
# through the copy, what `calls` holds is an input (each turn computes).
_SNAPSHOT = """
import durable
calls = []

@durable.step(cache=True)
def report(n):
    calls.append(n)
    return [n, SNAPSHOT]

for i in range(3):
    calls.append(i)
    SNAPSHOT = list(calls)
    print(len(report(1)[1]))
"""


@pytest.mark.parametrize("log", sorted(_LOGS))
def test_dbos_simple_workflow_attempts_counter(
    tmp_path: Path, child_env: dict[str, str], log: str
) -> None:
    """test_simple_workflow_attempts_counter: one workflow id called ten
    times runs its body once (DBOS counts one attempt). Here the calls are
    made by a script's loop over a table of functions, which empties the
    list the bodies append to before each one: that list is state the bodies
    only write, so the loop changing it must not make the same call look
    changed (a refused run, a cached step that missed every time), nor the
    module it comes from filling it; a copy of it the body reads still counts."""
    (tmp_path / "events.py").write_text('calls = []\ncalls.extend(["imported"])\n')
    script = tmp_path / "table.py"
    script.write_text(_SCRIPT.format(import_line=_LOGS[log]))
    done = subprocess.run(
        [sys.executable, str(script)], env=child_env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]
    script.write_text(_SNAPSHOT)  # never the output of an older copy
    done = subprocess.run(
        [sys.executable, str(script)], env=child_env, capture_output=True, text=True
    )
    assert done.stdout.split() == ["1", "3", "5"], done.stderr


def test_langgraph_named_tasks_functional(store: durable.Store) -> None:
    """test_named_tasks_functional: a bound method as two named tasks, a
    named function, a partial unnamed and named, a callable object: each
    recorded under its name (an unnamed partial's names its bound arguments,
    `baz('baz')`). Then that argument changes at a recorded position: never
    replayed (on_change="rerun" runs it anew, and what follows it)."""
    import functools

    ran: list[str] = []

    class Foo:
        def foo(self, value: str) -> str:
            ran.append("foo")
            return value + "foo"

    def bar(value: str) -> str:
        return value + "|bar"

    def baz(update: str, value: str) -> str:
        ran.append(update)
        return value + f"|{update}"

    class Qux:
        def __call__(self, value: str) -> str:
            return value + "|qux"

    def make(update: str) -> durable.Workflow[[str], str]:
        f = Foo()
        foo = durable.step(name="custom_foo")(f.foo)
        other_foo = durable.step(name="other_foo")(f.foo)
        baz_task = durable.step(functools.partial(baz, update))
        custom_baz = durable.step(name="custom_baz")(functools.partial(baz, "custom_baz"))
        qux = durable.step(name="qux", version="1")(Qux())

        @durable.workflow(store=store, name="workflow", run_id="t", on_change="rerun")
        def workflow(inputs: str) -> str:
            foo_result = foo(inputs)
            other_foo(inputs)
            return qux(custom_baz(baz_task(durable.step(name="custom_bar")(bar)(foo_result))))

        return workflow

    assert make("baz")("") == "foo|bar|baz|custom_baz|qux"
    names = [s.name for s in make("baz").history("t") if s.kind == "step"]
    assert names[:3] + names[4:] == ["custom_foo", "other_foo", "custom_bar", "custom_baz", "qux"]
    assert names[3].endswith(".baz('baz')") and ran == ["foo", "foo", "baz", "custom_baz"]
    assert make("baz")("") == "foo|bar|baz|custom_baz|qux" and len(ran) == 4
    assert make("BAZ")("") == "foo|bar|BAZ|custom_baz|qux"
    assert ran[4:] == ["BAZ", "custom_baz"]
