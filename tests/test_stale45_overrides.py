"""A resume override of a dict parameter (or of a `**kwargs` parameter) is
merged key by key into the run's value. For a parameter whose value the
run could not record (not plain data under `allow_pickle=False`), the base
of that merge was the parameter's DEFAULT: the resumed run computed with
defaults it was never called with (`mode="fast"` mixed into a `cfg` the run
had called without it). The run's value is unknown: the merge is refused,
unless the override is that whole value (its recorded digest) or the
default is (the run was called with it)."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest

import durable


@dataclasses.dataclass
class Tag:
    k: int


DEFAULT = {"k": 1, "mode": "fast"}


def _flow(store: durable.Store, seen: list[Any], fail: list[bool], default: Any = DEFAULT) -> durable.Workflow:  # type: ignore[type-arg]
    @durable.step(name="use")
    def use(cfg: dict[str, Any]) -> int:
        seen.append(sorted(cfg))
        if fail[0]:
            raise RuntimeError("not yet")
        return len(cfg)

    @durable.workflow(name="dict_flow", store=store, on_change="rerun")
    def dict_flow(cfg: dict[str, Any] = default, **extra: Any) -> int:
        return use({**cfg, **extra})

    return dict_flow


def test_a_dict_override_never_merges_into_the_default_of_an_unrecorded_argument(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path), allow_pickle=False)
    seen: list[Any] = []
    fail = [True]
    wf = _flow(store, seen, fail)
    with pytest.raises(RuntimeError):
        wf.with_options(run_id="r").run({"k": 5, "tag": Tag(5)})  # Tag: not recorded
    fail[0] = False
    with pytest.raises(durable.ConfigurationError, match=r"cfg.*could not record.*whole"):
        wf.resume("r", cfg={"k": 6})  # was run with {"k": 6, "mode": "fast", "tag": ...}: no mode
    assert seen == [["k", "tag"]]  # nothing ran
    # The whole value the run was called with: the same call.
    assert wf.resume("r", cfg={"k": 5, "tag": Tag(5)}).value == 2
    assert seen == [["k", "tag"], ["k", "tag"]]


def test_a_kwargs_override_never_merges_into_an_empty_dict_for_unrecorded_kwargs(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path), allow_pickle=False)
    seen: list[Any] = []
    fail = [True]
    wf = _flow(store, seen, fail)
    with pytest.raises(RuntimeError):
        wf.with_options(run_id="r").run(DEFAULT, n=3, tag=Tag(5))
    fail[0] = False
    with pytest.raises(durable.ConfigurationError, match=r"extra.*could not record.*whole"):
        wf.resume("r", tag=Tag(5))  # n=3 would be lost
    assert wf.resume("r", n=3, tag=Tag(5)).value == 4  # in the order of the call: a dict's order counts
    assert seen == [["k", "mode", "n", "tag"]] * 2


def test_a_dict_override_merges_into_a_default_the_run_was_called_with(tmp_path: Path) -> None:
    store = durable.open_store(str(tmp_path), allow_pickle=False)
    seen: list[Any] = []
    fail = [True]
    wf = _flow(store, seen, fail, {"k": 1, "tag": Tag(1)})
    with pytest.raises(RuntimeError):
        wf.with_options(run_id="r").run({"k": 1, "tag": Tag(1)})  # equal to the default: its digest
    fail[0] = False
    assert wf.resume("r", cfg={"k": 2}).value == 2  # merged into it
    assert seen == [["k", "tag"]] * 2
    # A recorded dict: merged into the run's value, as always.
    fail[0] = True
    with pytest.raises(RuntimeError):
        wf.with_options(run_id="s").run({"k": 1, "mode": "slow"})
    fail[0] = False
    assert wf.resume("s", cfg={"k": 2}).value == 2
    assert seen[2:] == [["k", "mode"]] * 2


def test_a_dict_override_of_an_argument_without_a_digest_is_the_whole_value(tmp_path: Path) -> None:
    """A lock in it: no digest tells the run's value; the override stands
    for it whole, as any argument the run could not record does."""
    store = durable.open_store(str(tmp_path), allow_pickle=False)
    seen: list[Any] = []
    fail = [True]
    wf = _flow(store, seen, fail)
    with pytest.raises(RuntimeError):
        wf.with_options(run_id="r").run({"k": 5, "lock": threading.Lock()})
    fail[0] = False
    assert wf.resume("r", cfg={"k": 5, "lock": threading.Lock()}).value == 2  # no "mode" mixed in
    assert seen == [["k", "lock"]] * 2
