"""Whether the newest generation of an object store's lease (`objectlease`)
may be taken over: given up, its holder gone on this host, or one that
stayed unrenewed for as long as a live holder could still trust it,
watched on our elapsed clock (another host's, whose pid means nothing
here, or one here that looks expired while its pid lives)."""

from __future__ import annotations

import os
import time
from typing import Any, Protocol

from .lease import Watching, _gone_here, _is_free, told_watching
from .pidspace import same_pid_space


class Looking(Protocol):
    """What a judgement needs of the lease that looks (`ObjectLease`)."""

    objects: Any
    prefix: str
    ttl: float
    run: str


def takeable(lease: Looking, gen: int, doc: dict[str, Any]) -> bool:
    if left_here(doc):
        return True
    if not _is_free(doc):
        return ahead(doc, lease.ttl) and not same_pid_space(doc) and silent(lease, gen, doc)
    if doc.get("released") or _gone_here(doc):
        return True  # given up, or its holder's pid is gone on this host
    # Expired by the wall clock alone, which may have jumped forward, on
    # this host too (an NTP step, a VM resumed) while the holder renews:
    # a live pid here (a frozen holder, SIGSTOP) is watched as one elsewhere.
    return silent(lease, gen, doc)


def silent(lease: Looking, gen: int, doc: dict[str, Any]) -> bool:
    """Whether a lease from another machine that looks expired stayed the
    newest generation for as long as its holder could still trust it,
    timed on our elapsed clock. Its expiry was written with the holder's
    clock, and machines' clocks differ (by minutes, after a VM restore):
    read with a clock running ahead, a live lease looks expired. A live
    holder renews every third of its lease, and trusts a claim for two
    thirds of it (`ObjectLease._fresh`), so one that shows no new generation
    for that long (and a margin) is gone, whatever either clock says.

    The watch starts at the first look and raises `Watching` until it is
    over: the caller waits (an async one awaits, its loop going on) and
    tries again, and this same generation and token found then is gone.
    Another one found then was renewed: the run is held."""
    where, now = (getattr(lease.objects, "url", ""), lease.prefix), elapsed()
    watch = watch_of(doc, lease.ttl)
    seen = _WATCHED.get(where)
    if seen is not None and seen[:2] != (gen, doc.get("token")):
        _WATCHED.pop(where, None)
        if now - seen[2] < watch * 2 + 10:  # else a watch given up long ago
            return False
        seen = None
    if seen is None:
        seen = _WATCHED[where] = (gen, doc.get("token"), now)
        told_watching(lease.run, doc, watch)
    left = seen[2] + watch - now
    if left > 0:
        raise Watching(left)
    _WATCHED.pop(where, None)  # (another thread may have ended it too)
    return True


def ahead(doc: dict[str, Any], ttl: float) -> bool:
    """Written in our future by more than its length: its holder's clock runs
    ahead (hours, after a VM restore), dead or alive; watched as if expired."""
    return float(doc.get("since", 0)) - time.time() > held_for(doc, ttl)


def held_for(doc: dict[str, Any], ttl: float) -> float:
    held = float(doc.get("expires", 0)) - float(doc.get("since", 0))  # one clock: no skew
    return held if 0 < held < 24 * 3600 else ttl


def watch_of(doc: dict[str, Any], ttl: float) -> float:
    """How long an expired lease from another host is watched (`silent`)."""
    held = held_for(doc, ttl)
    return held * 2 / 3 + held / 10


# Expired leases of other hosts being watched (`silent`), by (store url,
# lease prefix): (generation, token, when the watch began on `elapsed`).
_WATCHED: dict[tuple[str, str], tuple[int, object, float]] = {}

# Tokens of the leases this process holds: a generation naming this process
# with any other token is one it gave up without its released marker landing
# (the store failed then), and this process would otherwise lock itself out
# of the run (in a notebook, a service) until it expired.
HELD: set[str] = set()


def left_here(doc: dict[str, Any]) -> bool:
    return same_pid_space(doc) and doc.get("pid") == os.getpid() and doc.get("token") not in HELD


def elapsed() -> float:
    """Seconds on a clock nobody sets, counting suspended time where the
    system has one (Linux's CLOCK_BOOTTIME)."""
    boot = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boot) if boot is not None else time.monotonic()
