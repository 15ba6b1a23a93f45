"""A rate limiter that keeps its schedule from its last value
(`self.last = max(now, self.last + self.gap)`), sleeping on it, called by
two steps, resumed in a new process with nothing changed: resumed, each
step executed once. Was refused ("CLIENT, which a writes and another step
reads"): the read of `self.last` feeding `self.last` itself counted as a
read (`selfchanges.feeds_itself`: it is `self.last += ...` spelled out,
which reads nothing another step wrote), and so did the limiter's own
set-up (`self.gap`), which no method of its class changes, read by a
method whose call hands its caller nothing (`methoduses._reads_nothing`).

Stay refused (`REFUSED`): the wait handed back to the step, the schedule
copied to another attribute the step's result reads, a step reading the
schedule itself, a step changing the limiter's set-up its wait returns."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_THEN, run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = """import os, time
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
"""
LIMITER = """class RateLimiter:
    def __init__(self, per_sec):
        self.gap, self.last = 1.0 / per_sec, 0.0
    def wait(self):
        now = time.monotonic()
        self.last = max(now, self.last + self.gap)
        time.sleep(min(self.last - now, 0.001))
class LLM:
    def __init__(self):
        self.limiter = RateLimiter(1000)
    def complete(self, prompt):
        self.limiter.wait()
        return len(prompt) * 0
CLIENT = LLM()
"""
OWN = """class LLM:
    def __init__(self):
        self.gap, self.last = 0.001, 0.0
    def complete(self, prompt):
        now = time.monotonic()
        self.last = max(now, self.last + self.gap)
        time.sleep(min(self.last - now, 0.001))
        return len(prompt) * 0
CLIENT = LLM()
"""
GLOBAL = """GAP, _LAST = 0.001, 0.0
def pace():
    global _LAST
    now = time.monotonic()
    _LAST = max(now, _LAST + GAP)
    time.sleep(min(_LAST - now, 0.001))
"""
CALLS = ("CLIENT.complete('hi')", "return CLIENT.complete('yo')")
CASES = {  # name: (module-level code, the first step's statements, the second's)
    "held": (LIMITER, *CALLS),
    "own": (OWN, *CALLS),
    "module": (GLOBAL, "pace()", "pace()\n    return 0"),
    # The variants that stay refused.
    "returned": (LIMITER.replace("time.sleep(min(self.last - now, 0.001))", "return self.last - now")
                 .replace("        self.limiter.wait()\n        return len(prompt) * 0", "        return int(self.limiter.wait() > 1)"), *CALLS),
    "copied": (OWN.replace("time.sleep(", "self.slot = self.last\n        time.sleep(")
               .replace("return len(prompt) * 0", "return int(self.slot < 0)"), *CALLS),
    "read": (LIMITER, CALLS[0], "return int(CLIENT.limiter.last < 0)"),
    "set_up": (LIMITER.replace("time.sleep(", "return self.gap\n        time.sleep(")
               .replace("        self.limiter.wait()\n        return len(prompt) * 0", "        return int(self.limiter.wait() > 1)"),
               "CLIENT.limiter.gap = 5.0", "return CLIENT.complete('yo')"),
}
REFUSED = ["returned", "copied", "read", "set_up"]
RUN = """
import importlib, durable
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("f71p_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else repr(str(e)[:300]))
"""


def test_a_schedule_kept_from_its_last_value_only_paces(tmp_path: Path) -> None:
    for n, (setup, write, read) in CASES.items():
        (tmp_path / f"f71p_{n}.py").write_text(HEAD + COUNTED_WRITE_THEN.format(name=n, setup=setup, write=write, read=read))
    run = RUN.format(names=list(CASES))
    first, second = run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})])
    assert first.split() == [w for n in CASES for w in (n, "suspended")], first
    # Were refused before: held, own.
    assert second.split() == [w for n in CASES for w in ((n, "refused") if n in REFUSED else (n, "value", "0"))], second
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in CASES] + [f"{n}:b" for n in CASES if n not in REFUSED])
