"""A sixteenth round of the peers' own test cases, across real processes:
DBOS's tests/test_dbos.py recovery of a workflow by id
(`test_recovery_workflow`), whose steps keep a log and a count in module
globals, the way DBOS's and joblib's suites count calls, here read by a
later step (`LOG.append(msg)` in `hear`, `" ".join(LOG)` in `summary`).
The rest of the round is in tests/test_peer_ports_sixteenth_state.py,
earlier rounds in tests/test_peer_ports*.py. Executions are counted by the
step bodies themselves, in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from .scripts import run_each, run_in

LOGGED = """
import os
import durable

LOG = []
STATS = {"heard": 0}

def counted(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

@durable.step
def hear(msg):
    counted("hear")
    LOG.append(msg)
    STATS["heard"] += 1
    return msg

@durable.step
def gate():
    if os.path.exists("fail"):
        raise RuntimeError("crash")
    return 0

@durable.step
def summary():
    counted("summary")
    return f"{STATS['heard']}: {' '.join(LOG)}"

@durable.workflow(run_id="chat")
def chat():
    hear("a")
    hear("b")
    gate()
    return summary()

STATE = {}

@durable.step
def put(key):
    counted("put")
    STATE[key] = 1
    return key

@durable.step
def keys():
    return ",".join(sorted(STATE))

@durable.workflow(run_id="fill")
def fill():
    durable.loop_over(put, ["x", "y"])  # a queue of steps, recorded once
    gate()
    return keys()

KEPT = {}

@durable.step
def keep(key):
    if key == "y" and os.path.exists("fail"):
        raise RuntimeError("crash")
    counted("keep")
    KEPT[key] = 1
    return key

@durable.step
def kept():
    return ",".join(sorted(KEPT))

@durable.workflow(run_id="items")
def each():
    durable.loop_over(keep, ["x", "y"], checkpoint_items=True)  # each item kept as it ends
    return kept()
"""

PHASE = """
import os
import durable
from flow import chat, each, fill

def call(wf=chat, **options):
    try:
        return wf.with_options(**options)()
    except RuntimeError as e:
        return str(e)
    except durable.DefinitionChangedError as e:
        return "refused " + str(("LOG" in str(e) and "hear writes" in str(e)) or "STATE" in str(e))

if os.environ.get("FIRST"):
    open("fail", "w").close()
    print(call(), call(), call(fill), call(fill), call(each), call(each))  # each second call resumes here
    os.remove("fail")
else:
    print(call(), "|", call(on_change="rerun"), "|", call())
    print(call(fill), "|", call(fill, on_change="rerun"), "|", call(each))
"""


@pytest.mark.slow
def test_dbos_recovery_of_steps_keeping_a_log_another_step_reads(tmp_path: Path) -> None:
    """The run fails after two `hear`s (a crash); resumed in the same
    process, they replay (the log is as they left it). Resumed in a new
    process, whose import left the log empty and the count 0, the replay
    could not redo the appends `summary` reads: refused, naming the log;
    under `on_change="rerun"` they run again and `summary` sees both; the
    completed run is then answered. The same for a `loop_over` block (a
    queue) of steps filling a dict (`STATE[k] = v`); and a block keeping
    each item as it ends (`checkpoint_items=True`): its kept items are
    taken in the process that kept them (`x` ran once there), and run again
    in a new one, whose dict the import left empty. Seen failing: the new
    process replayed both `hear`s and returned "0: ", and the block and
    returned "" (what no uninterrupted run returns); the kept items were
    taken, and the new process returned "y"."""
    (tmp_path / "flow.py").write_text(LOGGED)
    first, second = run_each([(tmp_path, PHASE, {"FIRST": "1"}), (tmp_path, PHASE, {})])
    assert first.strip() == "crash crash crash crash crash crash"
    assert second.splitlines() == ["refused True | 2: a b | 2: a b", "refused True | x,y | x,y"]
    counts = (tmp_path / "count").read_text().split()
    assert [counts.count(n) for n in ("hear", "summary", "put", "keep")] == [4, 1, 4, 3]


# The class's rate made from the environment, in its body (`rate = int(...)`)
# or by a module-level statement after it (`Mod.rate = int(...)`); the steps
# read it through `self` and `cls`, which their text does not name as the class.
CLASS_RATE = """
import os
import durable

def counted(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

class Body:
    rate = int(os.environ["K"])

    @durable.step
    def scaled(self, x):
        counted("scaled")
        return x * self.rate

    @durable.step(cache=True)
    def cached(self, x):
        counted("cached")
        return x * self.rate

class Mod:
    rate = 1

    @classmethod
    @durable.step
    def shifted(cls, x):
        counted("shifted")
        return x + cls.rate

Mod.rate = int(os.environ["K"])

@durable.workflow(run_id="body")
def by_instance(x):
    return Body().scaled(x)

@durable.workflow(run_id="mod")
def by_class(x):
    return Mod.shifted(x)

def call(wf):
    try:
        return wf(5)
    except durable.DefinitionChangedError as e:
        return "refused" if "Body changed" in str(e) or "Mod changed" in str(e) else str(e)

print(call(by_instance), call(by_class), Body().cached(5))
"""


@pytest.mark.slow
def test_dbos_class_recovery_with_the_class_state_made_from_the_environment(tmp_path: Path) -> None:
    """DBOS's test_classdecorators.py `test_class_recovery` and
    `test_inst_recovery`: starting a completed workflow by its id again
    returns its recorded result, executing nothing; here its steps are a
    method and a class method reading their class's rate, made from the
    environment, and Prefect's cached task over a method (tests/test_tasks.py
    `test_cache_key_fn_receives_self_if_method`), called plainly. K=2
    twice, then K=3: the second process is answered (and hits), the third
    refused (its rate is not the one the record was made with) and computes
    anew. Seen failing: with the rate set in the class body, the second
    process was refused ("now Body changed": the step object the class
    holds counted by its memo's ids) and K=3 was served K=2's cached `10`;
    set at module level, K=3 was answered K=2's `7`."""
    (tmp_path / "flow.py").write_text(CLASS_RATE)
    runs = [run_in(tmp_path, "flow.py", K=k).strip() for k in "223"]  # a script, as users run it
    assert runs == ["10 7 10", "10 7 10", "refused refused 15"]
    counts = sorted((tmp_path / "count").read_text().split())
    assert counts == ["cached", "cached", "scaled", "shifted"]
