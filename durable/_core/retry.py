"""The retry rule, written once: a policy (how many tries, which errors,
how long to wait) and one loop over it, as a plan that `drive_sync` and
`drive_async` run. Steps use it with their records (`_core.steps`), and
`loop_over` items use it without (`_fanout.executors`)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from .._errortext import and_list
from .._frozen import Frozen, dataclass
from .._storage.clock import MAX_WAIT
from ..errors import ConfigurationError, ControlFlow, DefinitionChangedError, SerializationError
from .plan import Call, Look, Pause, Plan

# Never tried again, whatever `retry_on=` names (named there: refused, `_exception_types`):
# a durable usage error in the body (a `wait_for` there, an option of the wrong type) says
# the same on every try; so does a refusal (a loop_over worker that loaded edited code), and
# a value that could not be recorded or sent back (the same value again).
NEVER = (ConfigurationError, DefinitionChangedError, SerializationError)

# What `retry_on=` takes, as the type checker sees it: what
# `_exception_types` accepts at run time, so `retry_on=[A, B]` type-checks.
RetryOn = (
    type[BaseException]
    | tuple[type[BaseException], ...]
    | list[type[BaseException]]
    | set[type[BaseException]]
    | frozenset[type[BaseException]]
)


@dataclass(frozen=True)
class RetryPolicy(Frozen):
    """`retries` tries after the first, for an exception of `retry_on`,
    waiting `delay * backoff**n` seconds before try n + 2, at most `max_delay`."""

    retries: int = 0
    delay: float = 1.0
    backoff: float = 2.0
    max_delay: float = 60.0
    retry_on: tuple[type[BaseException], ...] = (Exception,)

    @classmethod
    def checked(
        cls, retries: int, delay: float, backoff: float, max_delay: float, retry_on: object
    ) -> RetryPolicy:
        """The policy of a decorator's options, or ConfigurationError."""
        _check_types(retries, delay, backoff, max_delay)
        # Written so that a NaN, which compares false, is refused too.
        if not (retries >= 0 and delay >= 0 and backoff >= 1 and max_delay >= 0):
            given = f"retries={retries!r}, retry_delay={delay!r}, backoff={backoff!r}, max_delay={max_delay!r}"
            raise ConfigurationError(
                f"retries, retry_delay and max_delay must be >= 0 and backoff >= 1; given {given}"
            )
        # A plain int: a record keeps the count its budget was opened with (`numpy.int64(2)`).
        return cls(int(retries), delay, backoff, max_delay, _exception_types(retry_on))

    def wait(self, attempt: int) -> float:
        """Seconds to wait after the failed try number `attempt` (0 first):
        never past durable's longest wait, even with `max_delay=math.inf`."""
        try:
            grown = self.delay * self.backoff**attempt
        except OverflowError:  # a long run of tries: the caps apply
            grown = math.inf if self.delay else 0.0
        return float(min(grown, self.max_delay, MAX_WAIT))

    def again(self, exc: BaseException, attempt: int) -> bool:
        return attempt < self.retries and isinstance(exc, self.retry_on) and not isinstance(exc, NEVER)

    def after(self, exc: BaseException, attempt: int) -> float | None:
        """THE retry rule of a step's try and a `loop_over` item's alike: the
        seconds to wait after try `attempt` failed with exc, None when no try
        follows (a suspend or a stop is no failure: none follows either).
        Whether the next may start once waited is the run's (`replay.boundary`)."""
        if isinstance(exc, ControlFlow) or not self.again(exc, attempt):
            return None
        return self.wait(attempt)


def retrying(
    policy: RetryPolicy,
    call: Callable[[int], Call],
    failed: Callable[[Exception, int], float | None] | None = None,
    first: int = 0,
    look: Look | None = None,
) -> Plan[Any]:
    """Make `call(attempt)` until it returns or the policy gives up. A
    suspend or graceful stop is not a failure: it ends the loop as it is.
    `failed(exc, attempt)` sees every failure (to record it) and returns
    the wait before the next try, None to end the loop (`RetryPolicy.after`,
    also when exc must end it untried: a refusal). `first`:
    the tries of the budget made before (by a process that died); at least
    one try is made, even when none is left. `look`: what the delay before
    a retry looks at (a run's cancel marker)."""
    attempt = first
    while True:
        request = call(attempt)  # not a try yet: what fails here is not the step's failure
        try:
            return (yield request)
        except Exception as exc:
            if isinstance(exc, ControlFlow):
                raise
            wait = policy.after(exc, attempt) if failed is None else failed(exc, attempt)
            if wait is None:
                raise
        yield Pause(wait, look)
        attempt += 1


def _check_types(retries: object, delay: object, backoff: object, max_delay: object) -> None:
    """A count and three numbers; anything else (`retries=[ValueError]`,
    `retry_delay="1"`) failed as a bare TypeError of `>=`, and a float or a
    bool count (2.5, True) silently gave another number of tries."""
    if isinstance(retries, bool) or not isinstance(retries, numbers.Integral):
        hint = (
            ": the exceptions to retry go in retry_on=, the number of tries after "
            "the first in retries="
            if _names_exceptions(retries)
            else ""
        )
        raise ConfigurationError(f"retries must be a whole number >= 0, not {retries!r}{hint}")
    wants = {
        "retry_delay": (delay, "a number of seconds"),
        "backoff": (backoff, "a number >= 1"),
        "max_delay": (max_delay, "a number of seconds (math.inf for no cap)"),
    }
    for name, (value, wanted) in wants.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigurationError(f"{name} must be {wanted}, not {value!r}")


def _names_exceptions(value: object) -> bool:
    items = value if isinstance(value, (tuple, list, set, frozenset)) else [value]
    return any(isinstance(t, type) and issubclass(t, BaseException) for t in items)


def _exception_types(retry_on: object) -> tuple[type[BaseException], ...]:
    items: list[object] = [retry_on] if isinstance(retry_on, type) else []
    if not items and isinstance(retry_on, (tuple, list, set, frozenset)):
        items = list(retry_on)
    if not items or not all(isinstance(t, type) and issubclass(t, BaseException) for t in items):
        raise ConfigurationError(
            f"retry_on must be an exception class or a tuple, list or set of them, not {retry_on!r}"
        )
    types = tuple(t for t in items if isinstance(t, type) and issubclass(t, BaseException))
    never = [t.__name__ for t in types if not issubclass(t, Exception) and t is not BaseException]
    if never:
        # Ctrl-C, a cancelled task or an exit ends the run `interrupted` untried
        # (DESIGN §2): listed, it looked retried and was not.
        raise ConfigurationError(
            f"retry_on must be an exception class that is an Exception: {and_list(never)} "
            f"{'are' if len(never) > 1 else 'is'} never retried (a BaseException such as Ctrl-C, a cancelled asyncio task or "
            "SystemExit ends the run interrupted, to resume)"
        )
    if usage := [t.__name__ for t in types if issubclass(t, NEVER)]:
        # Listed, it looked retried and was not, as a BaseException (hunt49: SerializationError).
        raise ConfigurationError(
            f"retry_on names {and_list(usage)}, which {'are' if len(usage) > 1 else 'is'} never retried: a durable "
            "ConfigurationError, DefinitionChangedError or SerializationError says the same "
            "on every try (a class above them, such as DurableError, may be named: they are "
            "left out of it)"
        )
    return types
