"""What every part of the store conformance suite shares: the opener a
backend's test class provides, the capabilities it declares, and a bounded
wait for a condition another process brings about."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import pytest

from .._storage.base import Store


class Opener(Protocol):
    """Opens the store under test again, as another client would: each call
    a new Store (its own connection or client) on the same place. It must
    pickle (a module-level function, or `functools.partial` of one): the
    suite's second processes open the place with it too."""

    def __call__(self, **options: Any) -> Store: ...


class SuiteBase:
    """The capabilities a backend declares and the fixture it overrides."""

    # False for a store that lives in one process (memory://): the checks
    # that need a second process are skipped.
    shared_across_processes: ClassVar[bool] = True
    # False where the lease is an OS lock that never expires while its
    # holder lives (the local store); a store over a `durable.KeyStore`
    # has expiring leases.
    leases_expire: ClassVar[bool] = True

    @pytest.fixture
    def opener(self) -> Opener:
        """Override: return the opener of a fresh, empty place for each test."""
        raise NotImplementedError("override the `opener` fixture in your test class")

    # The checks that start second processes (a few seconds each): a suite
    # may mark them, e.g. to run them apart from quick tests.
    PROCESS_CHECKS: ClassVar[frozenset[str]] = frozenset({
        "test_create_race_in_processes_has_one_winner",
        "test_contenders_in_processes_one_wins",
        "test_a_killed_holder_is_taken_over_at_once",
        "test_an_expired_holder_is_taken_over_and_writes_nothing_more",
        "test_a_killed_run_resumes_at_its_step",
        "test_a_run_resumed_in_another_process_replays",
    })  # fmt: skip

    def needs_processes(self) -> None:
        if not self.shared_across_processes:
            pytest.skip("the store lives in one process")


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll until condition() holds (another process is moving it), or fail."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.02)


def posix_only() -> None:
    if os.name != "posix":
        pytest.skip("needs SIGSTOP and SIGKILL")
