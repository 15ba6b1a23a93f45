"""A recorded output read back for a replay (`_core.loadback`): a cached
output whose blob was pruned runs the step again, decided once, with one
look for the blob beyond the read that missed it."""

from __future__ import annotations

from typing import Any

import pytest

import durable

CALLS: list[int] = []


def test_a_pruned_cached_output_is_looked_for_once(store: durable.Store) -> None:
    store = durable.open_store(store.url, blob_threshold=32)

    @durable.step(cache=True)
    def big(n: int) -> str:
        CALLS.append(n)
        return "b" * n

    @durable.workflow(store=store, name="pruned")
    def flow(n: int, fail: bool = False) -> int:
        size = len(big(n))
        if fail:
            raise RuntimeError("stop after the cached step")
        return size

    with pytest.raises(RuntimeError):
        flow.with_options(run_id="r")(50, fail=True)
    store.delete(store.list("cache/"))  # a prune racing with the hit: the record, not its blob
    looked: list[str] = []
    real = store.get_blob

    def counting(*args: Any) -> Any:
        if args[0] == "pruned":  # the run's own copy, then the cache's: one look
            looked.append(args[-1])
        return real(*args)

    store.get_blob = counting  # type: ignore[method-assign]
    resumed = flow.resume("r", fail=False)
    assert (resumed.value, resumed.steps_replayed, CALLS) == (50, 0, [50, 50])
    # The replay's read, then one look that it is gone: not one per copy of the rule.
    assert len(looked) == 2 and len(set(looked)) == 1
