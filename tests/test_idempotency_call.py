"""A step's idempotency key names its call, not only its position: a
service that deduplicates by the key answers a retry or a resume of the
same call with the first one's effect, and never answers another call
at that position (other arguments, after a failure or a crash) with it.
Keyed by position alone, `checkout(50)` resumed after `checkout(30)`
failed was told "charged 30"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import durable

from .scripts import ROOT, run_in

FLOW = """
import json, os, signal, sys
import durable

SERVICE = sys.argv[1]  # a payment service: one charge per key


@durable.step
def charge(amount):
    key = durable.current_run().idempotency_key()
    charges = json.load(open(SERVICE)) if os.path.exists(SERVICE) else {}
    receipt = charges.setdefault(key, f"charged {amount}")
    with open(SERVICE, "w") as f:
        json.dump(charges, f)
    if os.environ.get("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)  # the answer never comes back
    return receipt


@durable.workflow(run_id="order")
def checkout(amount):
    return charge(amount)


print(checkout(int(sys.argv[2])))
"""


def test_another_call_at_the_position_gets_another_key(tmp_path: Path) -> None:
    charged: dict[str, str] = {}
    store = durable.open_store(tmp_path / "store")
    fail = tmp_path / "fail"

    @durable.step
    def charge(amount: int) -> tuple[str, str]:
        run = durable.current_run()
        assert run is not None
        key = run.idempotency_key()
        receipt = charged.setdefault(key, f"charged {amount}")
        if fail.exists():
            raise ConnectionError("no answer")
        return key, receipt

    @durable.workflow(store=store, run_id="order")
    def checkout(amount: int) -> tuple[str, str]:
        return charge(amount)

    fail.touch()
    try:
        checkout(30)
    except ConnectionError:
        pass
    fail.unlink()
    key, receipt = checkout(50)  # the failed run, resumed with another amount
    assert receipt == "charged 50"
    assert len(charged) == 2 and charged[key] == "charged 50"
    assert key.startswith("order:0/")


def test_the_same_call_keeps_its_key_across_a_kill_9(tmp_path: Path) -> None:
    script, service = tmp_path / "flow.py", tmp_path / "charges.json"
    script.write_text(FLOW)
    argv = [sys.executable, str(script), str(service), "30"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_STORE": str(tmp_path / "store")}
    killed = subprocess.run(argv, cwd=tmp_path, env={**env, "CRASH": "1"}, capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    assert run_in(tmp_path, str(script), str(service), "30").split() == ["charged", "30"]
    charges = json.loads(service.read_text())
    assert list(charges.values()) == ["charged 30"]  # run twice, charged once
    assert next(iter(charges)).startswith("order:0/")
