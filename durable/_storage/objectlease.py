"""Run leases on an object store: a series of generation objects under
`<run>/lease/`, the newest one the lease, renewed in the background and
taken over only once expired (`leasewatch`; see `lease` for the local flock)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterable
from typing import Any, Protocol

from ..errors import LeaseLostError
from .inherited import OBJECT_LEASES
from .lease import _ATTEMPTS, _gen_of, _gone_here, _read_json, locked_error, owner_doc
from .lease import object_lease_held as object_lease_held  # `Store.is_held` imports it here
from .leasewatch import _WATCHED as _WATCHED  # (tests look at it here)
from .leasewatch import HELD, ahead, elapsed, takeable, watch_of
from .pidspace import dead_here, same_pid_space


class _Objects(Protocol):
    def get(self, key: str) -> bytes | None: ...
    def create(self, key: str, data: bytes) -> bool: ...
    def list(self, prefix: str) -> list[str]: ...
    def delete(self, keys: Iterable[str]) -> None: ...


class ObjectLease:
    """Generation objects under `prefix` (see the module docstring).

    Why it is safe: the highest generation is never deleted (only keys
    below one's own are, and a release first writes a released-marker
    generation above its own). So after a create-only write of n+1 that
    succeeded, a fresh listing whose highest key is n+1 proves nobody holds
    a later claim; one whose highest key is higher means a recreated,
    long-deleted key and a lost race. Two contenders that read the same n
    race for the same key, and the store lets exactly one create it."""

    def __init__(self, objects: _Objects, prefix: str, ttl: float, run: str) -> None:
        self.objects, self.prefix, self.ttl, self.run = objects, prefix, ttl, run
        self.token = os.urandom(16).hex()  # as the local lease's (`lease.Lease`)
        self.generation = 0
        self.claimed = 0  # the newest generation a claim of ours wrote, or was cut short in
        self.started: float | None = None  # when this holder took the run
        self.lost = False
        self.why = "another process took the run over"  # what `check` says once lost
        # Whether the lease was taken from a holder that did not release it
        # (expired, gone): its late writes may still land (`SegmentWriter.read`);
        # `from_live`: one alive on this host then (stopped): no death (`killed`).
        self.took_over = self.from_live = False
        # The pid of the holder it was taken from on this host, gone, or alive
        # (stopped past its lease): its pools' tries end first (`triesgate`).
        self.dead_here = self.live_here = 0
        # Until then the lease is surely ours (a third of its life kept in
        # hand for clock drift); after it, `check` renews before trusting it.
        # Kept on two clocks (see `_fresh`): wall time and elapsed time.
        self.fresh_until = 0.0
        self.fresh_elapsed = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        OBJECT_LEASES.add(self)  # lost in a forked child (`inherited`)
        try:  # a Ctrl-C landing once the lease is claimed gives it up: nobody else could
            self._take()
            self._thread = threading.Thread(
                target=self._renew_loop, daemon=True, name="durable-lease"
            )
            self._thread.start()
        except BaseException:
            self.release()
            raise

    def _take(self) -> None:
        HELD.add(self.token)  # before any claim of ours can be read: see `leasewatch.left_here`
        try:
            self._contend()
        except BaseException:
            HELD.discard(self.token)
            raise

    def _contend(self) -> None:
        doc: dict[str, Any] = {}
        for _ in range(_ATTEMPTS):
            gen, doc, older = self._current()
            if gen and not takeable(self, gen, doc):
                raise locked_error(self.run, doc, watch_of(doc, self.ttl), ahead(doc, self.ttl))
            if self._claim(gen + 1, older):
                self.took_over = bool(gen) and not doc.get("released")
                self.from_live = self.took_over and same_pid_space(doc) and not _gone_here(doc)
                self.dead_here = dead_here(doc) if self.took_over else 0
                self.live_here = int(doc.get("pid", 0) or 0) if self.from_live else 0
                return
        raise locked_error(self.run, doc, watch_of(doc, self.ttl), ahead(doc, self.ttl))

    def _current(self) -> tuple[int, dict[str, Any], list[str]]:
        """(highest generation or 0, its owner document, every key listed)."""
        while True:
            gens = self._generations()
            if not gens:
                return 0, {}, []
            raw = self.objects.get(self._key(gens[-1]))
            if raw is not None:
                return gens[-1], _read_json(raw), [self._key(g) for g in gens]
            # Gone between the listing and the read: its holder moved on to a
            # higher generation, which a new listing shows.

    def _generations(self) -> list[int]:
        return sorted(g for k in self.objects.list(self.prefix) if (g := _gen_of(k)))

    def _claim(self, gen: int, older: list[str], doc: dict[str, Any] | None = None) -> bool:
        started, started_elapsed = time.time(), elapsed()
        first = self.started or started  # a renewal keeps the start
        body = json.dumps(doc or owner_doc(self.ttl, self.token, first)).encode()
        self.claimed = max(self.claimed, gen)
        if not self.objects.create(self._key(gen), body):
            return False
        listed = self._generations()
        if listed[-1:] != [gen] or (self.generation and gen - 1 not in listed):
            # A long-deleted key recreated (a renewal stalled past a takeover): lost, taken away.
            # The newest only where the run was removed since (a renewal's own generation gone).
            with contextlib.suppress(Exception):
                self.objects.delete([self._key(gen)])
            return False
        # Read our claim back: a store whose create-only write is not atomic
        # (moto's server lets two racing conditional PUTs both succeed) keeps
        # the last writer's body, and only that writer may win.
        raw = self.objects.get(self._key(gen))
        if raw is None or _read_json(raw).get("token") != body_token(body):
            return False
        self.generation = gen
        self.started = first
        self.fresh_until = started + self.ttl * 2 / 3
        self.fresh_elapsed = started_elapsed + self.ttl * 2 / 3
        # Older generations decide nothing now (a reader of one lists again).
        with contextlib.suppress(Exception):
            self.objects.delete(older)
        return True

    def _renew_loop(self) -> None:
        wait = self.ttl * RENEW_EVERY
        while not self._stop.wait(wait):
            with self._lock:
                if self._stop.is_set() or self.lost:
                    return
                # A failed renewal is tried again soon, not a third of the lease later.
                wait = self.ttl * (RENEW_EVERY if self._renewed() else RETRY_EVERY)
                if self.lost:
                    return

    def _renewed(self) -> bool:
        """Renew; False when the store failed (one request lost or timed
        out is no sign of another holder). Tried again while the lease is
        surely ours (`_fresh`); past that nobody may trust it: it is lost."""
        try:
            self.lost = not self._renew()
            return True
        except Exception as e:
            if not self._fresh():
                why = getattr(e, "cause", None) or f"{type(e).__name__}: {e}"
                self.why = f"it could not be renewed before it expired: the store failed ({why})"
                self.lost = True
            return False

    def check(self) -> None:
        """`LeaseLostError` once another process may hold the run: taken
        over, or (after a stall: SIGSTOP, a suspended laptop) possibly
        expired and found taken over by a renewal made now."""
        if not self.lost and not self._fresh():
            with self._lock:
                if not self.lost and not self._stop.is_set() and not self._fresh():
                    self._renewed()
        if self.lost or self._stop.is_set():
            raise LeaseLostError(self.run, why=self.why)

    def confirm(self) -> None:
        """`check`, made against the store now whatever the clocks say:
        before a deletion, which no later check undoes. A holder thought
        gone and taken over while its lease still looked fresh here (its
        pid reused, its host's name shared) finds out."""
        with self._lock:
            if not self.lost and not self._stop.is_set():
                self.lost = not self._renew()
        self.check()

    def _fresh(self) -> bool:
        """Whether the lease is surely still ours, on both clocks: a wall
        clock set back (NTP, a VM restored) would otherwise keep a stalled
        holder trusting its lease long after another process took it over,
        and the elapsed clock alone may stand still while a laptop sleeps."""
        return time.time() < self.fresh_until and elapsed() < self.fresh_elapsed

    def _renew(self) -> bool:
        gen, doc, older = self._current()
        # Above our generation, ours too: a claim S3 stored whose answer was lost.
        mine = doc.get("token") == self.token and not doc.get("released")
        if not (mine and self.generation <= gen <= self.claimed):
            return False
        return self._claim(gen + 1, older)

    def release(self, *, delete: bool = False) -> None:
        """Write a released marker above our generation; with `delete` (the
        run is being removed), delete every generation instead: a contender
        then finds none and starts again from the first, as for a new run.
        Unless this lease was taken from a holder that never released it
        (killed): its last claim may still be on its way (a PUT the network
        holds), and landing on an empty prefix it would be the newest, a
        lone generation naming a process gone, which a new run of another
        host waited out. The marker stays the newest then, the rest deleted
        below it, where a late claim decides nothing. A delete that failed (a policy without s3:DeleteObject) may leave
        generations, ours the newest: the marker then goes above them, read
        again (else the run stayed locked until the lease expired).

        The marker is one create-only write, unchecked: when another process
        took the run over, it already holds our generation + 1 (the write
        fails), or a later one, above which a marker that lands changes
        nothing (the newest generation decides); the next claim deletes it."""
        with self._lock:
            self._stop.set()  # from here on no check passes, whatever the store does
            HELD.discard(self.token)
            if not self.claimed or self.lost:
                return
            with contextlib.suppress(Exception):
                gen = self.generation
                # A claim cut short (a Ctrl-C in a renewal made in this thread,
                # `confirm`) may have written the newest generation: ask.
                if delete or self.claimed > gen:
                    gen, doc, older = self._current()
                    if doc.get("token") != self.token:
                        return  # another's (or none): nothing of ours to give up
                    if delete and not self.took_over:
                        with contextlib.suppress(Exception):
                            return self.objects.delete(older)  # ours, the newest, included
                        gen, doc, older = self._current()  # some left: is ours still the newest?
                        if doc.get("token") != self.token:
                            return
                marker = {"released": True, "token": self.token, "since": time.time()}
                if self.objects.create(self._key(gen + 1), json.dumps(marker).encode()) and delete:
                    self.objects.delete(older)  # all but the marker: ours, the newest, included

    def _key(self, gen: int) -> str:
        return f"{self.prefix}{gen:010d}"


# A holder renews every third of its lease (`leasewatch.silent` counts on it), and
# tries a failed renewal again after a tenth. Kept here, apart from the
# lease's life: a test renews often a lease that lives long, and a renewal
# late on a loaded machine then loses nothing it means to prove.
RENEW_EVERY = 1 / 3
RETRY_EVERY = 1 / 10

def body_token(body: bytes) -> object:
    return _read_json(body).get("token")

