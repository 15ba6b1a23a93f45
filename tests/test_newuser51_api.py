"""The 51st new-user walk, in the library: a wrong option of
`@durable.workflow(...)` (a level in capitals, `keep_last=0`) was shown
under five frames of durable's code, where a wrong option of
`@durable.step(...)` or `with_options(...)` is shown at the user's line."""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable
from durable._errortext import PACKAGE
from durable._storage.manifest import read_manifest, write_manifest


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As a user runs: the project's tests keep every frame (conftest)."""
    monkeypatch.delenv("DURABLE_TRACEBACK", raising=False)
    yield


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"durability": "paranoid"}, "durability must be one of 'fsync', 'batch', 'none', not 'paranoid'"),
        ({"keep_last": 0}, "keep_last must be a whole number >= 1, not 0"),
    ],
)
def test_a_wrong_workflow_option_is_shown_at_the_users_line(
    options: dict[str, object], said: str, shown: None
) -> None:
    """Before: check_options, Workflow.__init__, make_workflow and
    decorate were shown above the message."""
    with pytest.raises(durable.ConfigurationError) as e:

        @durable.workflow(**options)  # type: ignore[call-overload]
        def nightly() -> int:
            return 1

    assert said in str(e.value), str(e.value)
    ours = [f.name for f in traceback.extract_tb(e.value.__traceback__) if f.filename.startswith(PACKAGE)]
    assert ours == ["checked"], ours  # the one line that raises it again


def test_a_level_given_to_a_step_names_every_call_that_takes_one() -> None:
    """Before: "durability is an option of configure(), not of step()": a
    user who wants one workflow's records synced less was sent to the
    process-wide setting, not told of workflow() and with_options()."""
    with pytest.raises(TypeError) as e:

        @durable.step(durability="none")  # type: ignore[call-overload]
        def fetch() -> int:
            return 1

    said = str(e.value)
    assert said.endswith(
        "durability is an option of configure(), with_options() and workflow(), not of step()"
    ), said


RENAMED = """\
import durable

SCALE = 2


def scaled(x: int) -> int:
    return x * SCALE


@durable.step
def first(x: int) -> int:
    return scaled(x)


@durable.step
def second(x: int) -> int:
    raise RuntimeError("not yet")


@durable.workflow(run_id="n1")
def flow() -> int:
    return second(first(3))
"""


def test_a_rename_is_told_of_a_run_recorded_before_helpers_parts_were_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step whose helper reads a constant, renamed (name=) since a run
    recorded by a durable that kept no digests of its helpers' parts: still
    "renamed (first -> one)", not one step removed and another added."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "renamed51.py").write_text(RENAMED)
    mod = importlib.import_module("renamed51")
    with pytest.raises(RuntimeError):
        mod.flow()
    store = durable.open_store(str(tmp_path / "store"))
    manifest = read_manifest(store, mod.flow.name, "n1")
    assert manifest is not None and any(k.startswith("said:helper:") for k in manifest.step_parts["first"])
    manifest.step_parts = {s: {k: v for k, v in p.items() if not k.startswith("said:")} for s, p in manifest.step_parts.items()}
    write_manifest(store, manifest)  # as the durable before this one wrote it
    (tmp_path / "renamed51.py").write_text(RENAMED.replace("@durable.step\ndef first", '@durable.step(name="one")\ndef first'))
    mod = importlib.reload(mod)
    with pytest.raises(durable.DefinitionChangedError) as e:
        mod.flow()
    assert "- one: renamed (first -> one): " in str(e.value) and "- first:" not in str(e.value), str(e.value)
