"""A second process for the store conformance suite: it opens the store the
parent's opener describes and runs the parent's commands, one JSON line in
and one out, until its stdin closes (or the parent kills it)."""

from __future__ import annotations

import json
import pickle
import sys
from typing import Any

from .._storage.base import Store
from .._storage.fence import Held
from ..errors import DurableError
from . import _flows


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        opener, options = pickle.load(f)
    store: Store = opener(**options)
    held: list[Held] = []
    _say({"ready": True})
    for line in sys.stdin:
        command = json.loads(line)
        try:
            answer = _do(store, held, command)
        except DurableError as e:
            answer = {"error": type(e).__name__, "message": str(e)}
        _say(answer)


def _do(store: Store, held: list[Held], c: dict[str, Any]) -> dict[str, Any]:
    op = c["op"]
    if op == "create":
        return {"ok": store.create(c["key"], bytes.fromhex(c["data"]))}
    if op == "acquire":
        held.append(store.acquire(c["workflow"], c["run"], c.get("ttl", 30.0)))
        return {"ok": True}
    if op == "release":
        held.pop().release()
        return {"ok": True}
    if op == "save_record":
        old = store.save_record(c["workflow"], c["run"], c["name"], bytes.fromhex(c["data"]))
        return {"ok": None if old is None else old.hex()}
    if op == "save_manifest":
        store.save_manifest(c["workflow"], c["run"], bytes.fromhex(c["data"]))
        return {"ok": True}
    if op == "put_blob":
        return {"ok": store.put_blob(c["workflow"], c["run"], bytes.fromhex(c["data"]))}
    if op == "flow":
        flow = _flows.flow.with_options(store=store, run_id=c["run"])
        return {"ok": flow(c["log"], c["gate"])}
    raise ValueError(f"unknown command {op!r}")


def _say(answer: dict[str, Any]) -> None:
    print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
