"""review56: false refusals in code users commonly write, each resume in a
new process refused ("STATS, which a writes and another step reads, is not
as a left it") though no output depends on it:

- a step counts or times into a global (`STATS["calls"] += 1`,
  `TIMES.append(t)`, `SEEN.add(x)`) and another step only shows it
  (`log.info("calls=%d", STATS["calls"])`, `print("took", sum(TIMES))`):
  what a statement of its own hands to `print` or a logger's method is no
  read now;
- both steps call a helper filling a memo or a lazy client where it is
  missing (`if k not in _CACHE: _CACHE[k] = ...`, `global _client; if
  _client is None: _client = make()`, `_CLIENTS.setdefault(n, make())`): a
  fresh process fills it again alike (`selffills.memo_only`).

A step that also computes from it, reads the memo otherwise (`len(_CACHE)`,
`k in _CACHE`) or fills a container it then changes (`GROUPS.setdefault(k,
[]).append(x)`, a lazy list appended to) still reads it (refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

MEMO = "_CACHE = {}\ndef lookup(k):\n    if k not in _CACHE:\n        _CACHE[k] = k * 2\n    return _CACHE[k]"
LAZY = "_client = None\ndef client():\n    global _client\n    if _client is None:\n        _client = object()\n    return _client"
SHOWN = {
    "logged": ("STATS = collections.Counter()", "STATS['calls'] += 1", "log.info('calls=%d', STATS['calls'])"),
    "debugged": ("SEEN = set()", "SEEN.add(x)", "log.debug('seen %s', len(SEEN))"),
    "printed": ("TIMES = []", "TIMES.append(1.0)", "print('took', sum(TIMES))"),
    # Filled where it is missing, in a fresh process again alike.
    "memo": (MEMO, "lookup(x)", "lookup(x)"),
    "lazy_client": (LAZY, "client()", "client()"),
    "lazy_dict": ("_CLIENTS = {}\ndef client(n):\n    return _CLIENTS.setdefault(n, object())", "client('a')", "client('a')"),
}
# Computed from: read (a replay of `a` leaves them as the import made them).
LAZY_LIST = "_items = None\ndef items():\n    global _items\n    if _items is None:\n        _items = []\n    return _items"
READ = {
    "printed_and_read": ("TIMES = []", "TIMES.append(1.0)", "print('took', sum(TIMES))\n    x += len(TIMES)"),
    "memo_counted": (MEMO, "lookup(x)", "x += len(_CACHE)"),
    "memo_tested": (MEMO, "lookup(x)", "x += 1 if 5 in _CACHE else 0"),
    "grouped": ("GROUPS = {}", "GROUPS.setdefault('k', []).append(x)", "x += len(GROUPS.get('k') or [])"),
    "lazy_list": (LAZY_LIST, "items().append(x)", "x += len(items())"),
    # Filled with what the first caller handed, not from the key alone: a fresh process fills in b's (the lead).
    "memo_by_value": ("_SEEN = {}\ndef first(k, v):\n    if k not in _SEEN:\n        _SEEN[k] = v\n    return _SEEN[k]", "first('k', x)", "x += first('k', 7)"),
    "lazy_by_arg": (LAZY.replace("client():", "client(u):").replace("object()", "u"), "client(x)", "x += client(7)"),
    "setdefault_by_value": ("_D = {}\ndef put(k, v):\n    return _D.setdefault(k, v)", "put('k', x)", "x += put('k', 7)"),
}

CASE = """import collections, logging, os
import durable

log = logging.getLogger(__name__)
{head}


def counted(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")


@durable.step
def a(x):
    counted("{name}_a")
    {a}
    return x


@durable.step
def b(x):
    counted("{name}_b")
    {b}
    return x + 1


@durable.workflow(run_id="r-{name}")
def wf():
    a(5)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b(0)
"""

RUN = """
import importlib, durable
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("flow56s_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else e)
"""


def test_a_global_another_step_only_shows_is_not_read(tmp_path: Path) -> None:
    cases = {**SHOWN, **READ}
    for n, (head, a, b) in cases.items():
        (tmp_path / f"flow56s_{n}.py").write_text(CASE.format(name=n, head=head, a=a, b=b))
    run = RUN.format(names=list(cases))
    first, second = run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})])
    assert first.split() == [w for n in cases for w in (n, "suspended")], first
    said = dict(line.split(" ", 1) for line in second.splitlines() if line.split(" ")[0] in cases)
    assert said == {**dict.fromkeys(SHOWN, "value 1"), **dict.fromkeys(READ, "refused")}, second
    ran = (tmp_path / "count").read_text().split()  # each a once; b on the resumes that went on
    assert sorted(ran) == sorted([f"{n}_a" for n in cases] + [f"{n}_b" for n in SHOWN])
