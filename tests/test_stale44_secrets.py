"""A `durable.redact()` value counts in a cache key only to keep the call
out of the cache (another secret must never be served an output computed
from this one). One held where the digest walks apart, in an attribute a
class's own `__getstate__` leaves out, or in a global of a module passed
as an argument, was digested as a bare marker: two clients holding two
tokens shared one cache entry."""

from __future__ import annotations

from typing import Any

import pytest

import durable


class Client:
    """Pickles its name only; the token stays out of its pickled state."""

    def __init__(self, name: str, token: str) -> None:
        self.name, self.token = name, durable.redact(token)

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name}


def test_a_secret_a_getstate_leaves_out_keeps_the_call_out_of_the_cache(store: durable.Store) -> None:
    calls: list[str] = []

    @durable.step(name="fetch", cache=True)
    def fetch(client: Client, url: str) -> str:
        calls.append(client.token.value)
        return f"{url} as {client.token.value}"

    @durable.workflow(name="fetching", store=store)
    def fetching(token: str) -> str:
        return fetch(Client("api", token), "/me")

    with pytest.warns(UserWarning, match=r"argument 'client' holds a durable.redact\(\) value"):
        assert fetching.with_options(run_id="a").run("alice").value == "/me as alice"
    assert fetching.with_options(run_id="b").run("bob").value == "/me as bob"  # not alice's
    assert calls == ["alice", "bob"]


SECRETS = """
import os

import durable

TOKEN = durable.redact(os.environ.get("STALE44_TOKEN", "alice"))
"""


def test_a_secret_in_a_module_passed_as_an_argument_keeps_the_call_out_of_the_cache(
    store: durable.Store, load: Any, monkeypatch: Any
) -> None:
    calls: list[str] = []

    @durable.step(name="whoami", cache=True)
    def whoami(cfg: Any) -> str:
        calls.append(cfg.TOKEN.value)
        return str(cfg.TOKEN.value)

    with pytest.warns(UserWarning, match=r"argument 'cfg' holds a durable.redact\(\) value"):
        assert whoami(load("stale44_secrets", SECRETS)) == "alice"
    monkeypatch.setenv("STALE44_TOKEN", "bob")
    assert whoami(load("stale44_secrets", SECRETS)) == "bob"
    assert calls == ["alice", "bob"]
