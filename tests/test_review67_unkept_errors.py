"""An error holding what a `persist=False` step returned (`raise
AuthError(token)`): its message and traceback text went into the failed
try's record and the run's manifest, the secret the step kept out written
in clear (review67). Held by identity, as an output is."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._core.attempts import UNKEPT_TEXT

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
