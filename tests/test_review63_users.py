"""Code users commonly write, suspended after its first step and resumed
in a new process with nothing changed: each resumes, executing each step
once. Were refused (the rule that refused, in `durable/_fingerprint`):

- an LLM client whose rate limiter reads the time its last call left
  (`self.last`), only to sleep: on the client itself or on a limiter
  object it holds (`effects.effect_only` through `kept.shown_only`, and
  `methoduses._reads_nothing`). Right to resume: what the step returns
  and the state it leaves (`self.last = time.monotonic()`) depend on no
  such read; a replay in a new process only sleeps otherwise, and durable
  vouches for values, never for timing (a replayed step takes no time);
- a `warn_once` helper of a utils module of yours keeping a module-level
  set or flag two steps' calls set (`effects`, by the name used there:
  `stepreach.written_only`; `helpers.warn_once(m)` through the module:
  `stepreach._calls_only`);
- a lazy memo filled whole, `if not _C: _C.update(load())` or `_C = _C or
  {...}` over `_C = {}` (`selffills._updated`, `selffills._lazy`).

Each with the variants that stay refused (`REFUSED`): the limiter's wait
handed back (`return delay`), a branch raising on it, a wait kept
(`self.waited = elapsed`); `len(utils._WARNED)`, a `warn_once` telling
whether it warned; a memo also filled by key, or filled from a parameter."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_THEN, RATE_LIMITER, run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = """import os, time, warnings
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
"""
UTILS = """import warnings
_WARNED = set()
_ONCE = False
def warn_once(msg):
    if msg in _WARNED:
        return
    _WARNED.add(msg)
    warnings.warn(msg)
def warn_flag(msg):
    global _ONCE
    if not _ONCE:
        _ONCE = True
        print("warned", msg)
def warn_told(msg):
    if msg in _WARNED:
        return False
    _WARNED.add(msg)
    warnings.warn(msg)
    return True
"""
LIMITED = RATE_LIMITER + """class LLM:
    def __init__(self, model):
        self.model, self.limiter = model, RateLimiter(1000)
    def complete(self, prompt):
        self.limiter.wait()
        return len(prompt) * 0
CLIENT = LLM("m")"""
PACED = """class LLM:
    def __init__(self, model):
        self.model, self.last = model, 0.0
    def complete(self, prompt):
        now = time.monotonic()
        elapsed = now - self.last
        if elapsed < 0.001:
            time.sleep(0.001 - elapsed)
        self.last = time.monotonic()
        return len(prompt) * 0
CLIENT = LLM("m")"""
FILLED = """_C = {}
def load():
    return {"a": 0}
def cfg():
    if not _C:
        _C.update(load())
    return _C
"""
CASES = {  # name: (module-level code, the first step's statements, the second's)
    "limiter": (LIMITED, "CLIENT.complete('hi')", "return CLIENT.complete('yo')"),
    "paced": (PACED, "CLIENT.complete('hi')", "return CLIENT.complete('yo')"),
    "warn_once": ("from r63utils import warn_once", "warn_once('old')", "warn_once('old')\n    return 0"),
    "warn_flag": ("from r63utils import warn_flag", "warn_flag('old')", "warn_flag('old')\n    return 0"),
    "warn_mod": ("import r63utils", "r63utils.warn_once('old')", "r63utils.warn_once('old')\n    return 0"),
    "memo_update": (FILLED, "cfg()['a']", "return cfg()['a']"),
    "memo_or": ("_C = {}\ndef cfg():\n    global _C\n    _C = _C or {'a': 0, 'b': 1}\n    return _C", "cfg()['a']", "return cfg()['a']"),
    # The variants that stay refused.
    "limiter_returns": (LIMITED.replace("self.last = time.monotonic()", "self.last = time.monotonic()\n        return delay")
                        .replace("self.limiter.wait()", "return int(self.limiter.wait() > -1)"), "CLIENT.complete('hi')", "return CLIENT.complete('yo')"),
    "paced_raises": (PACED.replace("time.sleep(0.001 - elapsed)", "raise RuntimeError('slow down')"), "CLIENT.complete('hi')",
                     "try:\n        return CLIENT.complete('yo')\n    except RuntimeError:\n        return 1"),
    "paced_kept": (PACED.replace("time.sleep(0.001 - elapsed)", "self.waited = elapsed"), "CLIENT.complete('hi')",
                   "return CLIENT.complete('yo') + int(getattr(CLIENT, 'waited', 0) > 0)"),
    "warn_len": ("import r63utils", "r63utils.warn_once('old')", "return len(r63utils._WARNED) - 1"),
    "warn_told": ("from r63utils import warn_told", "warn_told('old')", "return int(warn_told('old'))"),
    "memo_keyed": (FILLED + "def put(k):\n    _C[k] = 1\n", "cfg()['a']\n    put('z')", "return len(cfg()) - 1"),
    "memo_param": (FILLED.replace("def cfg():", "def cfg(extra=None):").replace("update(load())", "update(extra or load())"),
                   "cfg({'a': 1, 'b': 2})['a']", "return len(cfg()) - 1"),
}
REFUSED = [n for n in CASES if list(CASES).index(n) >= list(CASES).index("limiter_returns")]
RUN = """
import importlib, durable, warnings
warnings.simplefilter("ignore")
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("r63u_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else repr(str(e)[:300]))
"""


def test_pacing_warning_once_and_filled_memos_resume_unless_a_step_reads_them(tmp_path: Path) -> None:
    (tmp_path / "r63utils.py").write_text(UTILS)
    for n, (setup, write, read) in CASES.items():
        (tmp_path / f"r63u_{n}.py").write_text(HEAD + COUNTED_WRITE_THEN.format(name=n, setup=setup, write=write, read=read))
    run = RUN.format(names=list(CASES))
    first, second = run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})])
    first, second = (" ".join(w for w in o.split() if w not in ("warned", "old")) for o in (first, second))
    assert first.split() == [w for n in CASES for w in (n, "suspended")], first
    # Were refused before: limiter, paced, warn_once, warn_flag, warn_mod, memo_update, memo_or.
    assert second.split() == [w for n in CASES for w in ((n, "refused") if n in REFUSED else (n, "value", "0"))], second
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in CASES] + [f"{n}:b" for n in CASES if n not in REFUSED])
