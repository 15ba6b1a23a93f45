"""The live run. Held in ContextVars so that two runs in one process (threads
or asyncio tasks) never see each other's state."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ._records import Attempt, StepRecord
from ._store import Store

R = TypeVar("R")
E = TypeVar("E", bound=BaseException)


@dataclass
class RunContext:
    """What a step can ask about the run it executes in (`current_run()`)."""

    run_id: str
    workflow: str
    store: Store
    records: dict[int, StepRecord] = field(default_factory=dict)
    failures: dict[int, list[Attempt]] = field(default_factory=dict)
    timers: dict[int, float] = field(default_factory=dict)
    items: dict[int, dict[int, bytes]] = field(default_factory=dict)
    policy: str = "refuse"
    fingerprints: dict[int, str] = field(default_factory=dict)
    # The run's lease; an object-store lease sets `.lost` when taken over.
    lease: object | None = None
    position: int = 0
    replayed: int = 0
    executed: int = 0
    first_live: int | None = None
    # The first refusal (changed definition, nondeterminism, suspension, lost
    # lease) raised to the body: final even if the body catches it.
    refusal: BaseException | None = None

    def take_position(self) -> int:
        pos = self.position
        self.position += 1
        return pos

    def refuse(self, exc: E) -> E:
        """Remember a refusal before raising it, so that a body that catches
        it (`except Exception:`) can neither go on nor complete the run."""
        if self.refusal is None:
            self.refusal = exc
        return exc

    def check_refused(self) -> None:
        if self.refusal is not None:
            raise self.refusal

    @property
    def step_index(self) -> int | None:
        scope = _step_var.get()
        return scope[0] if scope else None

    @property
    def attempt(self) -> int:
        scope = _step_var.get()
        return scope[1] if scope else 0

    def idempotency_key(self) -> str:
        """`"<run_id>:<position>"`: stable across retries and resumes, so an
        external service can deduplicate the side effect of this step."""
        index = self.step_index
        if index is None:
            raise RuntimeError("idempotency_key() is only meaningful inside a step")
        return f"{self.run_id}:{index}"


@dataclass(frozen=True)
class Run(Generic[R]):
    """The outcome of one call of a workflow."""

    run_id: str
    workflow: str
    status: str
    value: R | None
    error: str | None
    resumed_from_step: int | None
    steps_replayed: int
    steps_executed: int
    fingerprint: str


_run_var: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar(
    "durable_run", default=None
)
# True inside a step body or a loop block: durable calls there run plainly.
_plain_var: contextvars.ContextVar[bool] = contextvars.ContextVar("durable_plain", default=False)
_step_var: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "durable_step", default=None
)


def current_run() -> RunContext | None:
    """The run executing in this thread or task, or None outside a workflow."""
    return _run_var.get()


def active_run() -> RunContext | None:
    """The run whose positions a durable call should take, None for a plain call."""
    if _plain_var.get():
        return None
    return _run_var.get()


def enter_run(ctx: RunContext | None) -> Callable[[], None]:
    run_token = _run_var.set(ctx)
    plain_token = _plain_var.set(False)

    def reset() -> None:
        _plain_var.reset(plain_token)
        _run_var.reset(run_token)

    return reset


def enter_step(position: int, attempt: int) -> Callable[[], None]:
    step_token = _step_var.set((position, attempt))
    plain_token = _plain_var.set(True)

    def reset() -> None:
        _plain_var.reset(plain_token)
        _step_var.reset(step_token)

    return reset


def enter_plain() -> Callable[[], None]:
    token = _plain_var.set(True)
    return lambda: _plain_var.reset(token)


def copy_context() -> contextvars.Context:
    return contextvars.copy_context()


def outside(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap fn so that it runs with no live run (for worker threads)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        reset = enter_plain()
        try:
            return fn(*args, **kwargs)
        finally:
            reset()

    return call
