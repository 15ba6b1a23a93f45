"""A `persist=False` step called in a thread a step's body started or fed
(its own `ThreadPoolExecutor`, a `threading.Thread`) ran with no run state
there: what it returned was held by no run, and the step returning it on
wrote the secret into its record (review67)."""

from __future__ import annotations

import concurrent.futures as cf
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import durable

TOKEN = "".join(["s3cr3t-", "token-", "review67"])  # made at run time, as a real one is


def _stored(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def _in_a_pool(fn: Callable[[], str]) -> str:
    with cf.ThreadPoolExecutor(1) as pool:
        return str(pool.submit(fn).result())


_KEPT = cf.ThreadPoolExecutor(1)  # made before any run, its thread started by none


def _in_a_kept_pool(fn: Callable[[], str]) -> str:
    return str(_KEPT.submit(fn).result())


def _in_a_thread(fn: Callable[[], str]) -> str:
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(fn()))
    t.start()
    t.join()
    return got[0]


@pytest.mark.parametrize("how", [_in_a_pool, _in_a_kept_pool, _in_a_thread], ids=["pool", "kept", "thread"])
def test_a_secret_made_in_a_thread_of_a_step_stays_out_and_reruns(
    tmp_path: Path, how: Callable[[Callable[[], str]], str]
) -> None:
    ran: list[str] = []
    fail = [True]

    @durable.step(persist=False)
    def login() -> str:
        ran.append("login")
        return "".join(["s3cr3t-", "token-", "review67"])

    @durable.step
    def fetch() -> str:
        ran.append("fetch")
        return how(login)

    @durable.step
    def then() -> int:
        ran.append("then")
        if fail[0]:
            raise RuntimeError("crash after the secret's step")
        return 1

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> int:
        return len(fetch()) + then()

    with pytest.raises(RuntimeError):
        flow()
    assert TOKEN.encode() not in _stored(tmp_path)
    fail[0] = False
    assert flow() == len(TOKEN) + 1
    # fetch's output held the secret: a marker, so it ran again on resume (and login in it).
    assert ran == ["fetch", "login", "then", "fetch", "login", "then"]
    assert TOKEN.encode() not in _stored(tmp_path)
