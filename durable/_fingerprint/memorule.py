"""The one memo rule (`Memo`): a value reused while its holder is the
object asked about and everything it was computed from (its `witness`)
gives the same again; else computed afresh. The fingerprints of steps
(`memo`), and the parts of an analysis that are the same for many of them
(`loaded.EachModule`: what each loaded module sets of a library, hands to
one, writes of another module's globals), are kept by it.

Pure standard library."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from .witness import Witness, forward, recording

T = TypeVar("T")


class Memo(Generic[T]):
    """The one memo rule: key -> (holder, value, what it was computed
    from). A value is reused only while its holder is the object asked
    about (held, so its id cannot be reused while the entry exists) and
    its witness holds; else it is computed afresh under a new witness. A
    computation that raises is never memoised. Used inside the computation
    of another memoised value, its witness counts for that one too."""

    def __init__(self, size: int = 1024) -> None:
        self._entries: dict[Hashable, tuple[object, T, Witness]] = {}
        self._size = size
        # The entries a recomputation replaced, newest first (`earlier`).
        self._before: dict[Hashable, list[tuple[object, T, Witness]]] = {}

    def get(
        self, key: Hashable, holder: object, compute: Callable[[], T], *, files: bool = True
    ) -> T:
        hit = self.peek(key, holder, files=files)
        return hit if hit is not None else self.compute(key, holder, compute)

    def compute(self, key: Hashable, holder: object, compute: Callable[[], T]) -> T:
        """`get` after `peek` found nothing: computed afresh and kept."""
        with recording(Witness()) as witness:
            value = compute()
        if len(self._entries) >= self._size:  # functions redefined again and again (a notebook)
            self._entries.clear()
            self._before.clear()
        old = self._entries.get(key)
        if old is not None:
            self._before[key] = [old, *self._before.get(key, [])][:4]
        self._entries[key] = (holder, value, witness)
        forward(witness)
        return value

    def peek(self, key: Hashable, holder: object, *, files: bool = True) -> T | None:
        """The memoised value while it holds, else None (nothing computed)."""
        hit = self._entries.get(key)
        if hit is not None and hit[0] is holder and hit[2].holds(files=files):
            forward(hit[2])
            return hit[1]
        return None

    def entry(self, key: Hashable) -> tuple[object, T, Witness] | None:
        """(holder, value, witness) kept for key, if any."""
        return self._entries.get(key)

    def earlier(self, key: Hashable) -> list[tuple[object, T, Witness]]:
        """The entry kept for key and those it replaced, newest first."""
        now = self._entries.get(key)
        return [*([now] if now is not None else []), *self._before.get(key, [])]

    def clear(self) -> None:
        self._entries.clear()
        self._before.clear()
