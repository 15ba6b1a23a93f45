"""Secrets stay out of the store: `durable.redact(value)` and `persist=False`.

The proof is a grep over every byte the store holds, plus counts showing
that the steps whose values were not kept run again on resume."""

from __future__ import annotations

import copy
import os
import pickle
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._core import replay

SECRET = "hunter2-secret"
TOKEN = "tok-6b0f3e-session-token"


def store_bytes(root: Path) -> bytes:
    chunks = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            chunks.append(Path(dirpath, name).read_bytes())
    assert chunks, "the store is empty: the grep would prove nothing"
    return b"\n".join(chunks)


def assert_absent(root: Path, *secrets: str) -> None:
    data = store_bytes(root)
    for secret in secrets:
        for form in (secret.encode(), secret.encode("utf-16-le"), secret[::-1].encode()):
            assert form not in data


def test_redacted_and_unpersisted_values_are_never_written(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    fail = {"publish": True}

    @durable.step(name="read_password")
    def read_password() -> durable.Redacted[str]:
        counts["read_password"] += 1
        return durable.redact(SECRET)

    @durable.step(name="login", persist=False)
    def login(password: durable.Redacted[str]) -> str:
        counts["login"] += 1
        assert password.value == SECRET
        return TOKEN

    @durable.step(name="fetch")
    def fetch(token: str) -> list[str]:
        counts["fetch"] += 1
        assert token == TOKEN
        return ["pkg-a", "pkg-b"]

    @durable.step(name="publish")
    def publish(items: list[str]) -> int:
        counts["publish"] += 1
        if fail["publish"]:
            raise RuntimeError("registry unavailable")
        return len(items)

    @durable.workflow(name="deploy", store=str(tmp_path / "store"), run_id="deploy-1")
    def deploy() -> int:
        return publish(fetch(login(read_password())))

    with pytest.raises(RuntimeError, match="registry unavailable"):
        deploy()
    assert counts == {"read_password": 1, "login": 1, "fetch": 1, "publish": 1}
    assert_absent(tmp_path / "store", SECRET, TOKEN)

    fail["publish"] = False
    run = deploy.run()
    assert run.value == 2
    # The two steps without a kept value ran again; fetch replayed.
    assert counts == {"read_password": 2, "login": 2, "fetch": 1, "publish": 2}
    assert_absent(tmp_path / "store", SECRET, TOKEN)

    recs = replay.load_context(durable.open_store(tmp_path / "store"), "deploy", "deploy-1", "")
    assert recs.records[0].extra == {"redacted": True}
    assert (recs.records[0].persisted, recs.records[0].value, recs.records[0].blob) == (
        False,
        None,
        None,
    )
    assert (recs.records[1].persisted, recs.records[1].value) == (False, None)


def test_a_fresh_redacted_token_each_run_does_not_block_replay(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()

    @durable.step(name="token")
    def token() -> durable.Redacted[str]:
        counts["token"] += 1
        return durable.redact(f"{TOKEN}-{counts['token']}")

    @durable.step(name="use")
    def use(tok: durable.Redacted[str]) -> str:
        # A Redacted argument leaves no argument digest behind, so a token
        # that differs on resume is not taken for a changed argument.
        counts["use"] += 1
        return tok.value[:3]

    @durable.step(name="finish")
    def finish(prefix: str, fail: bool) -> str:
        counts["finish"] += 1
        if fail:
            raise RuntimeError("not yet")
        return prefix

    @durable.workflow(name="session", store=str(tmp_path / "store"), run_id="s-1")
    def session(fail: bool) -> str:
        return finish(use(token()), fail)

    with pytest.raises(RuntimeError):
        session(True)
    assert session.resume("s-1", fail=False).value == "tok"
    assert counts == {"token": 2, "use": 1, "finish": 2}
    assert_absent(tmp_path / "store", f"{TOKEN}-1", f"{TOKEN}-2")


def test_redacted_inside_a_list_is_a_placeholder_too(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()

    @durable.step(name="creds")
    def creds() -> dict[str, object]:
        counts["creds"] += 1
        return {"user": "ci-bot", "password": durable.redact(SECRET)}

    @durable.workflow(name="nested", store=str(tmp_path / "store"), run_id="n-1")
    def nested() -> str:
        c = creds()
        return str(c["user"])

    assert nested() == "ci-bot"
    assert_absent(tmp_path / "store", SECRET)
    assert counts == {"creds": 1}
    rec = replay.load_context(durable.open_store(tmp_path / "store"), "nested", "n-1", "")
    assert rec.records[0].extra == {"redacted": True} and not rec.records[0].persisted


def test_returning_a_redacted_value_from_the_workflow_is_refused(tmp_path: Path) -> None:
    @durable.step(name="password")
    def password() -> durable.Redacted[str]:
        return durable.redact(SECRET)

    @durable.workflow(name="leaky", store=str(tmp_path / "store"), run_id="l-1")
    def leaky() -> durable.Redacted[str]:
        return password()

    with pytest.raises(durable.SerializationError, match="never written"):
        leaky()
    assert_absent(tmp_path / "store", SECRET)


def test_redacted_hides_its_value() -> None:
    secret = durable.redact(SECRET)
    assert secret.value == SECRET and durable.redact(secret) is secret
    assert SECRET not in repr(secret) and SECRET not in f"{secret}" and SECRET not in str([secret])
    with pytest.raises(TypeError, match="never written"):
        pickle.dumps(secret)
    with pytest.raises(TypeError, match="never written"):
        pickle.dumps({"nested": [secret]})
    assert copy.deepcopy(secret) is secret
