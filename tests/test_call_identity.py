"""A completed run answers only the same call; refusals are final."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import durable


def pipeline(store: durable.Store, counts: Counter[str], **options: Any) -> Any:
    @durable.step(name="fetch")
    def fetch(repo: str) -> str:
        counts["fetch"] += 1
        return repo.upper()

    @durable.step(name="shout")
    def shout(text: str, times: int) -> str:
        counts["shout"] += 1
        return text * times

    @durable.workflow(name="notes", store=store, **options)
    def notes(repo: str, times: int = 1) -> str:
        return shout(fetch(repo), times)

    return notes


def test_explicit_run_id_with_other_arguments_is_refused(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = pipeline(store, counts).with_options(run_id="nightly")
    assert wf("a") == "A"
    with pytest.raises(durable.DefinitionChangedError) as info:
        wf("b")
    err = info.value
    assert err.changed_arguments == {"repo": "'a' -> 'b'"}
    text = str(err)
    assert "repo: 'a' -> 'b'" in text and "restart=True" in text and "another run id" in text
    assert err.old_fingerprint not in text  # not two identical fingerprints
    assert counts == {"fetch": 1, "shout": 1}
    # The same arguments still get the recorded value, executing nothing.
    assert wf("a") == "A" and counts == {"fetch": 1, "shout": 1}


def test_run_id_callable_and_resume_overrides_never_return_the_old_value(
    store: durable.Store,
) -> None:
    counts: Counter[str] = Counter()
    wf = pipeline(store, counts, run_id=lambda repo, times=1: "fixed")
    assert wf("a") == "A"
    with pytest.raises(durable.DefinitionChangedError, match="repo: 'a' -> 'b'"):
        wf("b")
    with pytest.raises(durable.DefinitionChangedError, match="times: 1 -> 3"):
        wf.resume("fixed", times=3)
    assert counts == {"fetch": 1, "shout": 1}
    assert wf.resume("fixed").value == "A"  # no override: the same call


def test_rerun_reexecutes_from_the_first_position_whose_arguments_differ(
    store: durable.Store,
) -> None:
    counts: Counter[str] = Counter()
    wf = pipeline(store, counts, on_change="rerun").with_options(run_id="r")
    assert wf("a") == "A"
    run = wf.resume("r", times=2)
    assert run.value == "AA"
    # fetch('a') is the same call and replays; shout's arguments differ.
    assert counts == {"fetch": 1, "shout": 2}
    assert (run.steps_replayed, run.steps_executed) == (1, 1)
    assert wf.resume("r", times=2).value == "AA" and counts == {"fetch": 1, "shout": 2}


def test_default_applied_and_given_are_the_same_call(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = pipeline(store, counts).with_options(run_id="r")
    assert wf("a") == "A"
    assert wf("a", 1) == "A" and wf(repo="a", times=1) == "A"
    assert counts == {"fetch": 1, "shout": 1}


def test_a_run_recorded_without_argument_digests_is_not_the_same_call(
    store: durable.Store,
) -> None:
    """Fail closed: a completed manifest whose argument identity is unknown
    (written by an older version) never answers a call."""
    from durable._storage.manifest import read_manifest, write_manifest

    counts: Counter[str] = Counter()
    wf = pipeline(store, counts).with_options(run_id="r")
    wf("a")
    manifest = read_manifest(store, "notes", "r")
    assert manifest is not None
    del manifest.extra["arg_digests"]
    write_manifest(store, manifest)
    with pytest.raises(durable.DefinitionChangedError, match="without an argument digest"):
        wf("a")
    assert counts == {"fetch": 1, "shout": 1}


@pytest.mark.parametrize("refusal", ["arguments", "nondeterminism", "suspended", "artifact"])
def test_a_refusal_caught_by_the_body_still_ends_the_run(
    store: durable.Store, tmp_path: Any, refusal: str
) -> None:
    counts: Counter[str] = Counter()
    product = tmp_path / "out.txt"
    # Program state the body reads (not code): what the second call changes.
    state: dict[str, Any] = {"arg": 1, "first": "one", "suspend": True}

    @durable.step(name="one")
    def one(x: int) -> int:
        counts["one"] += 1
        return x

    @durable.step(name="other")
    def other(x: int) -> int:
        counts["other"] += 1
        return x

    @durable.step(name="made", artifacts_policy="refuse")
    def made() -> str:
        counts["made"] += 1
        product.write_text("x")
        durable.artifact(product)
        return "made"

    @durable.step(name="fallback")
    def fallback() -> str:
        counts["fallback"] += 1
        return "fallback"

    @durable.workflow(name="catcher", store=store, run_id="r")
    def catcher() -> str:
        try:
            got = [(one if state["first"] == "one" else other)(state["arg"]), made()]
            if state["suspend"]:
                durable.suspend("waiting for a person")
        except Exception:
            return fallback()  # must never run, nor complete the run
        return repr(got)

    with pytest.raises(durable.Suspended):
        catcher()
    assert counts == {"one": 1, "made": 1}
    expected: type[BaseException] = durable.DefinitionChangedError
    if refusal == "arguments":
        state["arg"] = 2
    elif refusal == "nondeterminism":
        state["first"] = "other"
        expected = durable.NondeterminismError
    elif refusal == "artifact":
        product.unlink()
        expected = durable.ArtifactMissingError
    else:
        expected = durable.Suspended
    with pytest.raises(expected):
        catcher()
    assert counts == {"one": 1, "made": 1}  # no fallback, nothing after the refusal
    [info] = catcher.runs()
    assert info.status == "suspended"
    # Once the cause is gone, the run goes on from its records.
    state.update(arg=1, first="one", suspend=False)
    if refusal == "artifact":
        product.write_text("x")
    assert catcher() == "[1, 'made']"
    assert counts == {"one": 1, "made": 1}


def test_a_plain_call_uses_its_own_arguments_not_the_recorded_ones(
    store: durable.Store,
) -> None:
    """`wf("a")` means times=1 (the default), even when the run under that id
    was recorded with times=2: a different call, never the old value."""
    counts: Counter[str] = Counter()
    wf = pipeline(store, counts).with_options(run_id="r")
    assert wf("a", times=2) == "AA"
    with pytest.raises(durable.DefinitionChangedError, match="times: 2 -> 1"):
        wf("a")
    assert counts == {"fetch": 1, "shout": 1}
    # resume() is what continues from the recorded arguments.
    assert wf.resume("r").value == "AA" and counts == {"fetch": 1, "shout": 1}
