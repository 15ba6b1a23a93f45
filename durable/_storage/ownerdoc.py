"""The owner document a lease holder writes (JSON: host, pid space, pid,
born, token, since, started, expires): what a waiting caller and a process
deciding whether the holder is alive read (`lease`, `objectlease`)."""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any

from .pidspace import host_name, own_start, pid_space


def owner_doc(ttl: float, token: str, started: float | None = None) -> dict[str, Any]:
    """`since`: when this document was written (a renewal writes another);
    `started`: when its holder took the run, what a waiting caller is told."""
    now = time.time()
    return {
        "host": host_name(),
        "space": pid_space(),  # where the pid means this process (`pidspace`)
        "pid": os.getpid(),
        "born": own_start(),  # tells this process from a later one given its pid (`pidspace`)
        "token": token,
        "since": now,
        "started": started or now,
        "expires": now + ttl,
    }


def owner_json(ttl: float, token: str) -> bytes:
    """`json.dumps(owner_doc(ttl, token)).encode()`, the same bytes (a test
    holds them equal), for the lease a local run takes at every call, a
    completed run's too: json's encoder cost 49,000 instructions here, three
    `repr`s of a float among them. Only what this process and time change
    is spelled at each call; anything json would spell otherwise (a time
    that is no finite number, a token not of hex digits) goes to json."""
    now = time.time()
    expires = now + ttl
    if not (math.isfinite(expires) and token.isalnum() and token.isascii()):
        return json.dumps(owner_doc(ttl, token)).encode()
    where = (host_name(), pid_space(), os.getpid())
    head = _HEADS.get(where)
    if head is None:
        if len(_HEADS) >= 16:  # renamed hosts, forked children: each a few
            _HEADS.clear()
        host, space, pid = where
        whole = json.dumps({"host": host, "space": space, "pid": pid, "born": own_start()})
        head = _HEADS[where] = whole[:-1].encode() + b", "
    since = repr(now).encode()
    return b'%s"token": "%s", "since": %s, "started": %s, "expires": %s}' % (
        head, token.encode(), since, since, repr(expires).encode()
    )


# (host, pid space, pid) -> the start of `owner_json`'s document.
_HEADS: dict[tuple[str, str, int], bytes] = {}
