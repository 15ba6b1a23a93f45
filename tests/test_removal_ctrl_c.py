"""A plain Ctrl-C landing in a removal's lease confirmation (`durable rm`,
`Workflow.delete` on an object store: `removal.remove_fenced` renews the
lease before each batch, in the caller's thread) just after the new
generation was written: the removal stops, and the lease it held is given
up all the same. Before, the generation just written, not yet remembered
as the holder's, was left behind: another host was refused the run
(RunLockedError) until it expired. The SIGINT is a real one, sent to the
thread removing once the renewal's create-only write returned."""

from __future__ import annotations

import signal
import sys
import threading
import uuid
from types import FrameType
from typing import Any

import pytest

import durable
from durable._storage.keys import lease_key
from durable._storage.objectlease import ObjectLease


def _interrupt_once_claimed(main: int, by: Any = ObjectLease._renew) -> Any:
    """SIGINT to `main` once a claim `by` makes has written its generation."""
    fired: list[bool] = []

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        back = frame.f_back
        claiming = back is not None and back.f_code is ObjectLease._claim.__code__
        made = claiming and back.f_back is not None and back.f_back.f_code is by.__code__
        if event == "return" and made and frame.f_code.co_name == "create" and not fired:
            fired.append(True)
            signal.pthread_kill(main, signal.SIGINT)

    return hook


@pytest.mark.skipif(sys.platform == "win32", reason="pthread_kill")
def test_a_ctrl_c_in_a_removals_lease_renewal_gives_the_lease_up() -> None:
    store = durable.open_store(f"memory://rm-ctrl-c-{uuid.uuid4().hex}")

    @durable.step
    def one() -> int:
        return 1

    @durable.workflow(store=store, run_id="r", name="w")
    def flow() -> int:
        return one()

    assert flow() == 1
    sys.setprofile(_interrupt_once_claimed(threading.get_ident()))
    try:
        with pytest.raises(KeyboardInterrupt):
            flow.delete("r")
    finally:
        sys.setprofile(None)
    assert store.list(lease_key("w", "r") + "/") == []  # nobody holds the run


@pytest.mark.skipif(sys.platform == "win32", reason="pthread_kill")
def test_a_ctrl_c_in_a_runs_first_claim_gives_the_lease_up() -> None:
    """The same window as a run starts: its first generation written, not
    yet remembered, was left held (the release saw generation 0)."""
    import json

    store = durable.open_store(f"memory://start-ctrl-c-{uuid.uuid4().hex}")

    @durable.workflow(store=store, run_id="r", name="w")
    def flow() -> int:
        return 1

    sys.setprofile(_interrupt_once_claimed(threading.get_ident(), ObjectLease._contend))
    try:
        with pytest.raises(KeyboardInterrupt):
            flow()
    finally:
        sys.setprofile(None)
    keys = sorted(store.list(lease_key("w", "r") + "/"))
    assert json.loads(store.get(keys[-1]) or b"{}").get("released") is True
