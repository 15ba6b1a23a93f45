"""A durable sleep's timer record (`timers/<position>`), kept until the
sleep's finished record replaces it."""

from __future__ import annotations

from .codec import pack, unpack


def timer_bytes(until: float, digest: str) -> bytes:
    """A durable sleep's timer record: its wake-up time and the digest of its
    duration (the argument digest its finished record keeps), so that a
    sleep called again with another duration is told a changed call."""
    return pack([until, digest])


def timer_of(body: bytes) -> tuple[float, str | None]:
    """(wake-up time, duration digest) of a timer record. A record written
    before timers kept the digest is the time alone: its digest is None,
    which matches no call (`replay.kept_timer` counts it as changed)."""
    row = unpack(body)
    if isinstance(row, list) and len(row) == 2 and isinstance(row[1], str):
        return float(row[0]), row[1]
    return float(row), None
