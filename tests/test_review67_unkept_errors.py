"""An error holding what a `persist=False` step returned (`raise
AuthError(token)`): its message and traceback text went into the failed
try's record and the run's manifest, the secret the step kept out written
in clear (review67). Held by identity, as an output is."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import durable
from durable._core.attempts import UNKEPT_TEXT
from tests.conftest import PY

TOKEN = "".join(["s3cr3t-", "token-", "review67"])  # made at run time, as a real one is


def _stored(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("where", ["step", "item"])
def test_an_error_holding_a_secret_is_kept_without_its_text(tmp_path: Path, where: str) -> None:
    ran: list[str] = []
    fail = [True]

    @durable.step(persist=False)
    def login() -> str:
        ran.append("login")
        return "".join(["s3cr3t-", "token-", "review67"])

    @durable.step(retries=1, retry_delay=0)
    def call(token: str) -> int:
        ran.append("call")
        if fail[0]:
            raise PermissionError(token)
        return len(token)

    def item(token: str) -> int:
        ran.append("item")
        if fail[0]:
            raise PermissionError(token)
        return len(token)

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> int:
        token = login()
        if where == "item":
            return durable.loop_over(durable.step(retries=1, retry_delay=0)(item), [token])[0]
        return call(token)

    with pytest.raises(PermissionError) as raised:
        flow()
    assert raised.value.args == (TOKEN,)  # the caller still gets the error as it was
    assert TOKEN.encode() not in _stored(tmp_path)
    tried = [a for s in flow.history("r") for a in s.failures]
    # A step's two tries; the block's failure (its item's tries are kept apart).
    assert [(a.type, a.message) for a in tried] == [("PermissionError", UNKEPT_TEXT)] * (2 if where == "step" else 1)
    fail[0] = False
    assert flow() == len(TOKEN)
    body = "call" if where == "step" else "item"
    assert ran == ["login", body, body, "login", body]
    assert TOKEN.encode() not in _stored(tmp_path)


POOLED = '''
import concurrent.futures as cf, os, sys
import durable

def note(name):
    with open(sys.argv[1], "a") as f:
        f.write(name + "\\n")

@durable.step(persist=False)
def login(i):
    note(f"login{i}")
    return "".join(["s3cr3t-", "pooled-", str(i)])

def item(i):
    token = login(i)
    note(f"item{i}")
    if os.environ.get("FAIL"):
        raise PermissionError(token)
    return len(token)

@durable.workflow(run_id="pooled")
def flow():
    with cf.ProcessPoolExecutor(1) as pool:
        return durable.loop_over(item, [1], executor=pool)

print(flow())
'''


def test_an_error_a_process_worker_raised_holding_a_secret_is_kept_without_its_text(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    script, counts = tmp_path / "flow.py", tmp_path / "counts"
    script.write_text(POOLED)
    store = Path(child_env["DURABLE_STORE"])
    failed = subprocess.run([PY, str(script), str(counts)], env={**child_env, "FAIL": "1"}, capture_output=True)
    assert failed.returncode == 1 and b"PermissionError: s3cr3t-pooled-1" in failed.stderr  # the caller's error as it was
    assert b"s3cr3t-pooled" not in _stored(store)
    done = subprocess.run([PY, str(script), str(counts)], env=child_env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["[15]"]
    assert counts.read_text().split() == ["login1", "item1"] * 2
    assert b"s3cr3t-pooled" not in _stored(store)
