"""The events `durable.on_event(callback)` receives, one class per kind of
event. Every event has `run_id`, `workflow` and `time` (`time.time()`); the
operation events (`StepExecuted`, `StepReplayed`, `StepRetried`,
`StepFailed`) share `position`, `name`, `attempt`, `fingerprint`,
`duration` and `kind`. See docs/observability.md."""

from ._core.events import (
    BlockProgress,
    Event,
    LeaseTakenOver,
    OperationEvent,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunInterrupted,
    RunRebased,
    RunStarted,
    RunSuspended,
    RunWaiting,
    StepExecuted,
    StepFailed,
    StepReplayed,
    StepRetried,
    Subscription,
)

__all__ = [
    "BlockProgress",
    "Event",
    "LeaseTakenOver",
    "OperationEvent",
    "RunCancelled",
    "RunCompleted",
    "RunFailed",
    "RunInterrupted",
    "RunRebased",
    "RunStarted",
    "RunSuspended",
    "RunWaiting",
    "StepExecuted",
    "StepFailed",
    "StepReplayed",
    "StepRetried",
    "Subscription",
]
