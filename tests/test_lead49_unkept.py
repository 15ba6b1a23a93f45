"""What a `persist=False` step returned is held by identity (`_core/unkept`),
with what an object of the user's own class holds. A library's object (an
HTTP or LLM client) is not opened: it holds constants that code shares
(`"GET"`, interned: one object wherever a literal spells it), and each one
marked made a later step returning the same literal count as holding the
secret: run again on every resume, and a workflow returning it refused."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import durable


@dataclass
class Creds:
    token: str


def test_a_library_object_marks_none_of_the_constants_it_holds(tmp_path: Path) -> None:
    ran: list[str] = []

    @durable.step(persist=False)
    def client() -> argparse.Namespace:
        return argparse.Namespace(method="GET")

    @durable.step
    def verb() -> str:
        ran.append("verb")
        return "GET"

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> str:
        client()
        return verb()

    assert flow() == "GET"
    assert flow() == "GET" and ran == ["verb"]


def test_an_object_of_the_users_class_still_keeps_its_token_out(tmp_path: Path) -> None:
    token = "".join(["s3cr3t-", "token-", "4242"])  # made at run time, as a real one is

    @durable.step(persist=False)
    def login() -> Creds:
        return Creds(token)

    @durable.step
    def header(c: Creds) -> str:
        return c.token

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> int:
        return len(header(login()))

    assert flow() == len(token)
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert token.encode() not in stored


def test_a_literal_beside_the_token_marks_no_other_output(tmp_path: Path) -> None:
    """`{"method": "GET", "token": t}`: the literal is one interned object
    wherever code spells it; the token, made at run time, is never interned."""
    token = "".join(["s3cr3t-", "token-", "4243"])
    ran: list[str] = []

    @durable.step(persist=False)
    def settings() -> dict[str, str]:
        return {"method": "GET", "token": token}

    @durable.step
    def verb(s: dict[str, str]) -> str:
        ran.append(s["method"])
        return "GET"

    @durable.step
    def leaked(s: dict[str, str]) -> str:
        return s["token"]

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> str:
        s = settings()
        assert leaked(s) == token
        return verb(s)

    assert flow() == "GET"
    assert flow() == "GET" and ran == ["GET"]
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert token.encode() not in stored
