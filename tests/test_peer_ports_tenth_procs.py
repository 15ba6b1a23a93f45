"""The tenth round of the peers' own test cases (see
tests/test_peer_ports_tenth.py), those whose peer test crosses a process
boundary: DBOS Transact (tests/test_singleexec.py test_step_sequence: one
workflow id started twice while its first step is slow; tests/test_dbos.py
test_eid_reset: a workflow waiting for a message, then finished by another
executor; tests/test_classdecorators.py test_inst_recovery after kill -9)
and joblib (joblib/test/test_hashing.py KlassWithCachedMethod
in a script run twice). Real processes; executions are counted by the
step bodies themselves, in a file."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

_SCRIPT = """
import os, sys, time
import durable

log, gate = sys.argv[1], sys.argv[2]

def note(what):
    with open(log, "a") as f:
        f.write(what + "\\n")

@durable.step
def step1():
    note("step1")
    if os.environ.get("HOLD"):  # DBOS's slow first try: held until the test opens the gate
        open(gate + ".in", "w").close()
        while not os.path.exists(gate):
            time.sleep(0.01)
    return 1

@durable.step
def step2(x):
    note("step2")
    return x + 1

def told(event):
    if isinstance(event, durable.events.RunWaiting):
        print("waiting for", event.holder, file=sys.stderr, flush=True)

durable.on_event(told)

@durable.workflow(run_id="wf")
def flow():
    return step2(step1())

@durable.workflow(run_id="wf")
def asking():
    return step2(step1()) + durable.wait_for("run_step")

mode = sys.argv[3]
if mode == "answer":
    print(asking.resume("wf", inputs={"run_step": 10}).value)
elif mode == "recv":
    try:
        print(asking())
    except durable.Suspended as e:
        print("suspended", e.waiting_for)
else:
    print(flow.with_options(wait=60)())
"""


def _script(tmp_path: Path) -> list[str]:
    script = tmp_path / "seq.py"
    script.write_text(_SCRIPT)
    return [sys.executable, str(script), str(tmp_path / "log"), str(tmp_path / "gate")]


def _run(cmd: list[str], mode: str, env: dict[str, str]) -> str:
    done = subprocess.run([*cmd, mode], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_dbos_step_sequence_in_two_processes(tmp_path: Path, child_env: dict[str, str]) -> None:
    """test_step_sequence: one workflow id started twice while the first
    start is inside its slow first step. The second process waits for the
    run (with_options(wait=), told by its RunWaiting event), as DBOS's
    second handle does, and gets the value; each step executed once."""
    cmd = _script(tmp_path)
    first = subprocess.Popen(
        [*cmd, "go"], env={**child_env, "HOLD": "1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    gate_in = tmp_path / "gate.in"
    while not gate_in.exists():  # the first process is inside step1
        assert first.poll() is None, first.communicate()
    second = subprocess.Popen(
        [*cmd, "go"], env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert second.stderr is not None
    told = second.stderr.readline()  # the RunWaiting event, once the wait begins
    assert told.startswith(f"waiting for pid {first.pid} "), told + second.communicate()[1]
    (tmp_path / "gate").touch()
    out1, err1 = first.communicate(timeout=120)
    out2, err2 = second.communicate(timeout=120)
    assert (first.returncode, second.returncode) == (0, 0), err1 + err2
    assert out1.strip() == out2.strip() == "2"
    assert (tmp_path / "log").read_text().split() == ["step1", "step2"]


@pytest.mark.slow
def test_dbos_eid_reset_another_process_finishes(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """test_eid_reset: a workflow that ran its steps and waits for a
    message is finished by another executor (DBOS moves the run to the
    executor that finishes it); here a second process answers the wait and
    completes the run, a third reads its value. The steps executed once."""
    cmd = _script(tmp_path)
    assert _run(cmd, "recv", child_env) == "suspended run_step"
    assert _run(cmd, "answer", child_env) == "12"
    assert _run(cmd, "recv", child_env) == "12"
    assert (tmp_path / "log").read_text().split() == ["step1", "step2"]


_KLASS = """
import sys
import durable

class KlassWithCachedMethod:
    def __init__(self):
        self.f = durable.step(cache=True)(self.f)

    def f(self, x):
        with open(sys.argv[1], "a") as log:
            log.write("ran\\n")
        return sorted(x)

k = KlassWithCachedMethod()
d = {"#s%d__c_maps.nii.gz" % n: [33] for n in (12069, 12158, 12258)}
print(k.f(d), k.f(set(d)), k.f(d))
"""


@pytest.mark.slow
def test_joblib_cached_method_of_a_script_in_two_sessions(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """test_dict_hash, test_set_hash with KlassWithCachedMethod defined in
    the script that runs (`__main__`): the first session computes each
    argument once, the second hits both. Seen failing before e04a68c: a
    class of a script never hit (every call looked like one that changed
    `self`, with a warning)."""
    script, log = tmp_path / "klass.py", tmp_path / "log"
    script.write_text(_KLASS)
    outs = [_run([sys.executable, str(script), str(log)], "", child_env) for _ in range(2)]
    assert outs[0] == outs[1] and log.read_text().split() == ["ran", "ran"]


_INSTANCE = """
import os, sys
import durable

def note(what):
    with open(sys.argv[1], "a") as log:
        log.write(what + "\\n")

class Model:
    def __init__(self, k):
        self.k = k
        self.first = durable.step(self.first)
        self.second = durable.step(self.second)

    def first(self, x):
        note("first")
        return x * self.k

    def second(self, y):
        note("second")
        if os.environ.get("CRASH"):  # killed inside the step, before its record
            os.kill(os.getpid(), 9)
        return y + 1

model = Model(3)

@durable.workflow(run_id="inst", on_change="refuse")
def flow(x):
    return model.second(model.first(x))

print(flow(2))
"""


@pytest.mark.slow
def test_dbos_inst_recovery_after_kill_9(tmp_path: Path, child_env: dict[str, str]) -> None:
    """test_inst_recovery with a real crash: steps made per instance in
    __init__ (`self.first = durable.step(self.first)`); the process is
    killed with SIGKILL inside the second. The next process replays the
    first (executed once) and executes the second, under "refuse". Seen
    failing before e04a68c: the resume was refused, "arguments changed"."""
    script, log = tmp_path / "inst.py", tmp_path / "log"
    script.write_text(_INSTANCE)
    cmd = [sys.executable, str(script), str(log)]
    crashed = subprocess.run(cmd, env={**child_env, "CRASH": "1"}, capture_output=True, text=True)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    done = subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "7" and log.read_text().split() == ["first", "second", "second"]


_COUNTER = """
import sys
import durable

calls = []

class Klass:
    def f(self, x):
        calls.append(x)
        with open(sys.argv[1], "a") as log:
            log.write("ran\\n")
        return x

cached = durable.step(cache=True)(Klass().f)
print(cached([1]), cached([1]))
calls.clear()  # a module-level statement that changes the list: the list counts by content
"""


@pytest.mark.slow
def test_joblib_memory_integration_counter_in_a_cleared_global(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """test_memory_integration's counter list in a module global, with a
    bound method cached (Memory(...).cache(Klass().f)) and the list cleared
    by a module-level statement: the same call twice executes once. (Was an
    xfail: the method only writes the list, yet its class's code counted it
    by content, so `self` looked changed and nothing was cached; see
    tests/test_peer_ports_twentyfirst.py.)"""
    script, log = tmp_path / "counter.py", tmp_path / "log"
    script.write_text(_COUNTER)
    done = subprocess.run([sys.executable, str(script), str(log)], env=child_env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert log.read_text().split() == ["ran"]
