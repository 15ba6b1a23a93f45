"""A workflow's first call must not cost seconds: a body that runs
`exec(text, module.__dict__)` may fill any global of its module, so each
step reading one counts the module's globals by content (`filled.
filled_from_outside`), a class by its `class` statement and what that
statement's module reads (`code._class_statement`). That named each step
once per statement reading it, and each was stamped again every time;
steps reading each other's module (a cycle) made every stamp cost the
others': one call of peers49's agent took ~15 s of CPU. In-process: the
stamps are counted."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from durable._core import code

AGENT = """
import os, types
import durable

class Agent:
    name = "helper"

def style(tone):
    def respond(self, text):
        return f"{self.name} ({tone}): {text}"
    return respond

@durable.step
def reply(agent, text):
    return agent.respond(text)

@durable.step
def classify(text, settings):
    return f"{text} x{settings.RATE}"

@durable.workflow(run_id="agent")
def flow(tone):
    agent = Agent()
    agent.respond = types.MethodType(style(tone), agent)
    said = reply(agent, "hi")
    settings = types.ModuleType("settings")
    exec(os.environ["SETTINGS"], settings.__dict__)
    return said, classify("mail", settings)
"""


def test_a_class_statement_stamps_each_function_it_reads_once(
    load: Callable[[str, str], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("SETTINGS", "RATE = 2")
    flow = load("perf58_agent", AGENT).flow
    stamped: collections.Counter[str] = collections.Counter()
    stamp = code.function_stamp

    def counted(fn: object) -> str | None:
        stamped[getattr(fn, "__qualname__", "?")] += 1
        return stamp(fn)

    monkeypatch.setattr(code, "function_stamp", counted)
    assert flow("formal") == ("helper (formal): hi", "mail x2")
    # Agent's statement (of the object handed to `reply`) reads the module's
    # three functions 4 or 5 times each: each is stamped once (was 5, 5, 4).
    assert stamped == {"reply": 1, "classify": 1, "style": 1}
