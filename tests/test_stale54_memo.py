"""A wrapper whose decorator line reads a file (stale53: what it holds
counts by content) that keeps a memo it fills as it is called: a dict in
its closure, or an object of the user's class (the wrapper itself, or one
its closure holds, filled through a method). Calls fill it; the
fingerprint a process keeps for the object stays what it read first, so a
re-call in the same process is not refused, while the file's value still
counts (another value, another fingerprint). In real processes (warmed
before the run, resumed cold, and the reverse) both replay: checked by
hand, see the report of stale54."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint.fingerprint import fingerprint_function

SOURCE = """
import functools, json

class Memo:
    def __init__(self, fn, by):
        functools.update_wrapper(self, fn)
        self.fn, self.by, self.seen = fn, by, {}

    def __call__(self, x):
        if x not in self.seen:
            self.seen[x] = self.fn(x) * self.by
        return self.seen[x]

class Cache:
    def __init__(self, by):
        self.by, self.seen = by, {}

    def lookup(self, x, fn):
        if x not in self.seen:
            self.seen[x] = fn(x) * self.by
        return self.seen[x]

def dict_memo(by):
    def deco(fn):
        memo = {}
        @functools.wraps(fn)
        def inner(x):
            if x not in memo:
                memo[x] = fn(x) * by
            return memo[x]
        return inner
    return deco

def object_memo(by):
    def deco(fn):
        memo = Cache(by)
        @functools.wraps(fn)
        def inner(x):
            return memo.lookup(x, fn)
        return inner
    return deco

@lambda fn: Memo(fn, json.load(open("cfg.json"))["f"])
def a(x):
    return x + 1

@dict_memo(json.load(open("cfg.json"))["f"])
def b(x):
    return x + 1

@object_memo(json.load(open("cfg.json"))["f"])
def c(x):
    return x + 1
"""


def test_a_memo_a_file_made_wrapper_fills_neither_refuses_a_recall_nor_hides_the_file(
    load: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.json").write_text(json.dumps({"f": 3}))
    m = load("memo54", SOURCE)
    before = {n: fingerprint_function(getattr(m, n)).value for n in "abc"}
    assert [getattr(m, n)(2) for n in "abc"] == [9, 9, 9]  # each memo filled
    assert {n: fingerprint_function(getattr(m, n)).value for n in "abc"} == before
    (tmp_path / "cfg.json").write_text(json.dumps({"f": 4}))
    m = load("memo54", SOURCE)
    after = {n: fingerprint_function(getattr(m, n)).value for n in "abc"}
    assert all(after[n] != before[n] for n in "abc"), (before, after)
