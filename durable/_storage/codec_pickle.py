"""The pickled side of `codec`: cloudpickle, for values msgpack cannot
hold exactly and for code sent to `loop_over` workers. The only module that
imports cloudpickle, and `codec` loads it on first use: a run whose values
are all plain never pays for it."""

from __future__ import annotations

import io
from typing import Any

import cloudpickle

_IN_MEMORY = (io.StringIO, io.BytesIO)


def dumps(value: Any) -> bytes:
    """A stored value's bytes (protocol 5), open files refused."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=5).dump(value)
    return buffer.getvalue()


class _Pickler(cloudpickle.CloudPickler):  # type: ignore[misc]
    """cloudpickle, except for open files: it would record their content and
    replay an `io.StringIO` in their place, which is not the value the step
    returned (a handle on a file)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, io.IOBase) and not isinstance(obj, _IN_MEMORY):
            raise TypeError(
                f"it holds an open file or stream ({type(obj).__name__}"
                f"{_named(obj)}), which cannot be replayed: return its path or its content"
            )
        return super().reducer_override(obj)


def _named(obj: Any) -> str:
    name = getattr(obj, "name", None)
    return f" {name!r}" if isinstance(name, str) else ""


def loads(data: bytes | memoryview) -> Any:
    return cloudpickle.loads(data)


def dumps_callable(obj: Any) -> bytes:
    return cloudpickle.dumps(obj)  # type: ignore[no-any-return]
