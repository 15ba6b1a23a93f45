"""A run served a large value from the cache keeps the cache's blob alive
with a ref marker. A run removed and made again under the same id, in the
same process, is another run: it writes its own marker, so that clearing
the cache never takes the blob it still refers to (a resume would run the
finished step again). Every test counts executions of the step bodies."""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage import cache as manage

CALLS: Counter[str] = Counter()
FAIL = {"use": True}


@durable.step(cache=True)
def big(n: int) -> str:
    CALLS["big"] += 1
    return "x" * n


@durable.step
def use(text: str) -> int:
    CALLS["use"] += 1
    if FAIL["use"]:
        raise RuntimeError("use fails")
    return len(text)


def test_a_run_made_again_under_its_id_keeps_the_blob_it_refers_to(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path / "store"), blob_threshold=1000)
    CALLS.clear()
    FAIL["use"] = True

    @durable.workflow(store=store, run_id="again")
    def flow(n: int) -> int:
        return use(big(n))

    with pytest.raises(RuntimeError):
        flow(5000)
    flow.delete("again")
    manage.clear(store)  # the run is gone: its marker and the blob go
    with pytest.raises(RuntimeError):
        flow(5000)  # a new run: big() computes again, the blob is back
    assert CALLS == {"big": 2, "use": 2}
    manage.clear(store)  # the entry goes; the blob the new run refers to stays
    FAIL["use"] = False
    assert flow(5000) == 5000
    assert CALLS == {"big": 2, "use": 3}  # big() was replayed, not run again


def test_a_clear_from_another_process_while_a_run_stores_a_blob_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`durable cache clear` run by another process between the blob of a
    run's miss and its ref marker swept the blob (it lists blobs, then
    entries and refs: neither named it yet), and the resume ran the
    recorded step again. The run's marker is now written before the blob."""
    import subprocess
    import sys

    from durable._storage.base import Store

    root = tmp_path / "store"
    store = durable.open_store(str(root), blob_threshold=1000)
    CALLS.clear()
    FAIL["use"] = True
    put = Store.put_blob
    cleared: list[str] = []

    def put_then_clear(self: Store, *args: object, **kwargs: object) -> str:
        digest = put(self, *args, **kwargs)  # type: ignore[arg-type]
        clear = [sys.executable, "-m", "durable", "cache", "clear", "--store", str(root)]
        cleared.append(subprocess.run(clear, capture_output=True, text=True, check=True).stdout)
        return digest

    @durable.workflow(store=store, run_id="raced")
    def flow(n: int) -> int:
        return use(big(n))

    monkeypatch.setattr(Store, "put_blob", put_then_clear)
    with pytest.raises(RuntimeError):
        flow(5000)
    monkeypatch.undo()
    assert len(cleared) == 1
    FAIL["use"] = False
    assert flow(5000) == 5000
    assert CALLS == {"big": 1, "use": 2}  # big() was replayed, not run again


def test_a_workflow_called_again_reuses_the_memoised_fingerprints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking a memoised fingerprint asks the steps it reaches for theirs;
    a step must be marked as being fingerprinted while its memo is checked,
    or a step reached again on the way (through the workflow's witness) was
    asked for its own afresh, recursing until Python's limit, which fails
    the check: every call computed every fingerprint again, hundreds of
    times (this test took 15 s)."""
    computed = counted_fingerprints(monkeypatch)
    store = durable.open_store(str(tmp_path / "store"), blob_threshold=1000)
    FAIL["use"] = False

    @durable.workflow(store=store, run_id="twice")
    def flow(n: int) -> int:
        return use(big(n))

    assert flow(5000) == 5000
    first = len(computed)
    computed.clear()
    assert flow(5000) == 5000  # completed: its definition is checked again
    # At most what the first call computed (six here: a fingerprint a step
    # had while being computed differs from its fresh one, which the
    # workflow's memo then finds changed); with the recursion, 818.
    assert 0 < first and len(computed) <= first


_REGISTRY_OF_STEPS = """
import durable

{steps}
STEPS = {{{names}}}

@durable.workflow(run_id="registry")
def flow(x):
    return {calls}
"""


def test_steps_reaching_each_other_through_a_registry_are_fingerprinted_a_few_times_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten steps that each call the next through a dict of all of them
    (`STEPS[name](x)`), so that each reaches every other: every path through
    the cycle was fingerprinted anew, and each step's witness was copied
    into every step reaching it. Six steps computed 9,690 fingerprints (3 s),
    ten more than a minute's worth; now each is computed a few times."""
    k = 10
    steps = "\n".join(
        f"@durable.step\ndef s{i}(x, depth=0):\n"
        f"    return x if depth > 2 else STEPS['s{(i + 1) % k}'](x + 1, depth + 1)\n"
        for i in range(k)
    )
    names = ", ".join(f"'s{i}': s{i}" for i in range(k))
    calls = " + ".join(f"s{i}(x)" for i in range(k))
    (tmp_path / "registry.py").write_text(
        _REGISTRY_OF_STEPS.format(steps=steps, names=names, calls=calls)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    computed = counted_fingerprints(monkeypatch)
    module = importlib.import_module("registry")
    try:
        assert module.flow(1) == k * 4  # each step adds 3, through three others
        assert module.flow(1) == k * 4  # completed: its definition checked again
    finally:
        sys.modules.pop("registry", None)
    assert len(computed) <= 40 * k  # 194 now; 9,690 for six steps before


def counted_fingerprints(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The functions fingerprinted from now on (not served by the memo), in order."""
    from durable._fingerprint import memo

    computed: list[object] = []
    real = memo.fingerprint_function

    def counted(fn: Any, **kwargs: Any) -> Any:
        computed.append(fn)
        return real(fn, **kwargs)

    monkeypatch.setattr(memo, "fingerprint_function", counted)
    return computed
