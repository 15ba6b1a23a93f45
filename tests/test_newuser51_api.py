"""The 51st new-user walk, in the library: a wrong option of
`@durable.workflow(...)` (a level in capitals, `keep_last=0`) was shown
under five frames of durable's code, where a wrong option of
`@durable.step(...)` or `with_options(...)` is shown at the user's line."""

from __future__ import annotations

import traceback
from collections.abc import Iterator

import pytest

import durable
from durable._errortext import PACKAGE


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As a user runs: the project's tests keep every frame (conftest)."""
    monkeypatch.delenv("DURABLE_TRACEBACK", raising=False)
    yield


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"durability": "Fsync"}, "durability='Fsync' is not a durability level: use one of 'fsync'"),
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
