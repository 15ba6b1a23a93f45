"""A local lease file's owner document, as its holder writes it: whole,
whatever a holder that died left there, and without a syscall more than
needed when the file is empty (every resume, every new run takes it)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import durable
from durable._storage.keys import lease_key


def test_a_longer_document_left_by_a_holder_that_died_is_replaced_whole(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path))
    path = tmp_path / lease_key("wf", "r")
    path.parent.mkdir(parents=True)
    left = {"host": "h" * 300, "pid": 1, "token": "t" * 32, "since": 0.0, "expires": 1.0}
    path.write_text(json.dumps(left))  # its holder died: the file is not locked
    lease = store.lease("wf", "r", 30.0)
    try:
        doc = json.loads(path.read_text())  # no tail of the longer one after it
        assert doc["token"] == lease.token and doc["pid"] == os.getpid()  # type: ignore[attr-defined]
    finally:
        lease.release()
    assert path.read_bytes() == b""  # released: no holder named


def test_a_document_left_by_a_holder_killed_is_replaced_whole(tmp_path: Path) -> None:
    """The same with a real holder, killed while it held the run."""
    script = textwrap.dedent(
        f"""
        import os, signal, durable
        lease = durable.open_store({str(tmp_path)!r}).lease("wf", "r", 30.0)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=False)
    assert done.returncode == -9
    path = tmp_path / lease_key("wf", "r")
    dead = json.loads(path.read_text())
    path.write_text(json.dumps({**dead, "host": dead["host"] + "-" * 200}))  # a longer name
    lease = durable.open_store(str(tmp_path)).lease("wf", "r", 30.0)
    try:
        assert json.loads(path.read_text())["token"] == lease.token  # type: ignore[attr-defined]
    finally:
        lease.release()


def test_a_resume_truncates_its_empty_lease_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the release only: taking an empty file has nothing to cut (a
    completed run's call takes no lease at all: `_core.recall`)."""
    calls = []

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow(go: bool = False) -> int:
        calls.append(1)
        if not go:
            durable.suspend("waiting for go")
        return 7

    with pytest.raises(durable.Suspended):
        flow()
    truncated: list[int] = []
    real = os.ftruncate

    def counted(fd: int, length: int) -> None:
        truncated.append(length)
        real(fd, length)

    monkeypatch.setattr(os, "ftruncate", counted)
    assert flow.resume("r", go=True).value == 7
    assert calls == [1, 1]
    assert truncated == [0]


@pytest.mark.parametrize("ttl", [30.0, 0.5, 7, 1e-9, float("inf")])
@pytest.mark.parametrize("token", ["0123456789abcdef" * 2, "not hex: \"quoted\""])
def test_the_owner_document_is_the_json_of_its_fields(
    ttl: float, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from durable._storage import ownerdoc

    for now in (1796578053.3161862, 1.0, 1e16 + 2.0, 0.1 + 0.2):
        monkeypatch.setattr(ownerdoc.time, "time", lambda now=now: now)
        whole = json.dumps(ownerdoc.owner_doc(ttl, token)).encode()
        assert ownerdoc.owner_json(ttl, token) == whole
        assert ownerdoc.owner_json(ttl, token) == whole  # its start kept since
    monkeypatch.setattr(socket, "gethostname", lambda: 'a "host"\n\u00e9')
    assert ownerdoc.owner_json(ttl, token) == json.dumps(ownerdoc.owner_doc(ttl, token)).encode()
