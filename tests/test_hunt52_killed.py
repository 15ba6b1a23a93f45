"""Deaths counted for a run (`killed.count_killed`) are its own. A child
run given its own id (`run_id=`), or kept in a store of its own, counts the
deaths inside it by its own records; its parent counted them too (it only
looked for a child under the derived id in its own store), and failed with
RunKilledError at the child's position while each attempt got further in
the child. A caller turned away by the run's lease (RunLockedError) counts
nothing: it never read the run as its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from durable._manage.runs import read_manifest
from tests.conftest import ROOT
from tests.scripts import run_each

pytestmark = pytest.mark.slow

FLOW = """
import os, signal, durable

def once(i):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(f"{i}\\n")
    if not os.path.exists(f"died{i}"):
        open(f"died{i}", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    return i

s = durable.step(once)

@durable.workflow(name="child", **{OPTIONS})
def child():
    return sum(s(i) for i in range(4))

@durable.workflow(name="wf", run_id="r1")
def wf():
    return child()

try:
    print("value", wf())
except durable.DurableError as e:
    print("error", type(e).__name__, e)
"""


def test_a_child_with_its_own_id_or_store_counts_its_deaths_alone(tmp_path: Path) -> None:
    kinds = {"own_id": '{"run_id": "kid"}', "own_store": '{"store": os.path.abspath("other")}'}
    folders = []
    for kind, options in kinds.items():
        (tmp_path / kind).mkdir()
        (tmp_path / kind / "flow.py").write_text(FLOW.replace("{OPTIONS}", options))
        folders += [tmp_path / kind] * 5
    outs = run_each([(folder, "import flow", {}) for folder in folders])
    for i, kind in enumerate(kinds):
        # The fourth was RunKilledError at position 0, the child's step 2 never tried.
        assert outs[5 * i : 5 * i + 5] == ["", "", "", "", "value 6\n"], (kind, outs)
        counted = (tmp_path / kind / "count").read_text().split()
        assert counted == ["0", "0", "1", "1", "2", "2", "3", "3"], (kind, counted)


RACING = """
import os, sys, durable

@durable.step
def work():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("work\\n")
    if os.environ.get("HOLD"):
        print("HOLDING", flush=True)
        sys.stdin.readline()  # killed here
    return 1

@durable.workflow(name="race", run_id="r1")
def race():
    return work()
"""


def test_a_caller_turned_away_by_the_lease_counts_no_death(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "racing52.py").write_text(RACING)
    store, count = tmp_path / "store", tmp_path / "count"
    monkeypatch.setenv("COUNT_FILE", str(count))
    monkeypatch.setenv("DURABLE_STORE", str(store))
    monkeypatch.setenv("DURABLE_MAX_RECOVERY_ATTEMPTS", "2")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}", HOLD="1")
    code = "import racing52; racing52.race()"
    holder = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert holder.stdout.readline() == "HOLDING\n"
        import racing52  # type: ignore[import-not-found]

        for _ in range(3):  # three losers of the race, each past the limit had it counted
            with pytest.raises(durable.RunLockedError):
                racing52.race()
    finally:
        holder.kill()  # the one death: SIGKILL in its step
        holder.wait()
        sys.modules.pop("racing52", None)
    assert holder.returncode == -signal.SIGKILL
    assert racing52.race() == 1  # that death counted alone, under the limit of 2
    assert count.read_text().split() == ["work", "work"]
    killed = read_manifest(durable.open_store(str(store)), "race", "r1").extra["killed"]
    assert killed[1:] == [0, 1], killed
