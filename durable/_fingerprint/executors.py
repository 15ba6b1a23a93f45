"""Objects that say where code runs, not what it computes: an executor of
`concurrent.futures` (a process or thread pool) or a Dask client, which a
workflow hands to `loop_over` or a step submits to. What they hold (a
client's id, new in every process; a pool's thread names) is no input of
a call: a global holding one counts by its statements alone, never by its
contents (every resume of a script connecting a client in its main block
was refused). The code they run counts where it is reached, and a worker
checks the code it loaded (`_fanout.workercode`).

Pure standard library: neither `distributed` nor a pool is imported."""

from __future__ import annotations

import sys


def runs_code_only(obj: object) -> bool:
    """Whether `obj` is a `concurrent.futures.Executor` or a Dask client."""
    futures = sys.modules.get("concurrent.futures")
    if futures is not None and isinstance(obj, futures.Executor):
        return True
    return any(c.__name__ == "Client" and c.__module__.partition(".")[0] == "distributed" for c in type(obj).__mro__)
