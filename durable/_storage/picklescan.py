"""Whether a value's stored bytes would hold an object (`codec.holds_any`:
a persist=False step's output found in a later value, `_core.unkept`): the
value pickled as a store's pickler reduces it, into a file that keeps
nothing, every object shown on the way."""

from __future__ import annotations

from typing import Any

from .codec_pickle import StorePickler


class _Found(Exception):
    pass


class _Sink:
    """A file that keeps nothing: a scan pickles only to be shown every object."""

    def write(self, data: Any) -> int:
        return len(data)


class _Scanner(StorePickler):
    """Shown every object the value's stored bytes would hold (`persistent_id`
    is asked of each, strings and numbers too), as a store's pickler reduces it."""

    def __init__(self, seen: Any) -> None:
        super().__init__(_Sink(), protocol=5)
        self.seen = seen

    def persistent_id(self, obj: Any) -> None:
        if self.seen(obj):
            raise _Found
        return None


def holds_any(value: Any, seen: Any) -> bool:
    """Whether the bytes of value would hold an object `seen` answers True for.
    A value that does not pickle is no store's either (its write fails)."""
    try:
        _Scanner(seen).dump(value)
    except _Found:
        return True
    except Exception:
        return False
    return False
