"""durable: make ordinary Python functions resumable.

Decorate a function with `@durable.workflow` and the functions it calls with
`@durable.step`; each step's output is recorded, so calling the workflow again
with the same run id skips the finished steps and continues from the first
one that did not finish."""

from ._api.ops import asleep, loop_over, sleep, suspend
from ._api.signals import stop_on_signals
from ._api.step import Step, step
from ._api.workflow import AsyncWorkflow, Workflow, workflow
from ._core.artifacts import artifact
from ._core.context import Run, RunContext, current_run
from ._core.redact import Redacted, redact
from ._fanout.progress import Progress
from ._manage.history import StepInfo
from ._manage.runs import RunInfo, gc
from ._storage.base import Store, open_store
from .errors import (
    ArtifactMissingError,
    ConfigurationError,
    CorruptRecordError,
    DefinitionChangedError,
    DurableError,
    IntegrityError,
    NondeterminismError,
    RunLockedError,
    RunNotFoundError,
    SerializationError,
    StorageError,
    Suspended,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "ArtifactMissingError",
    "AsyncWorkflow",
    "ConfigurationError",
    "CorruptRecordError",
    "DefinitionChangedError",
    "DurableError",
    "IntegrityError",
    "NondeterminismError",
    "Progress",
    "Redacted",
    "Run",
    "RunContext",
    "RunInfo",
    "RunLockedError",
    "RunNotFoundError",
    "SerializationError",
    "Step",
    "StepInfo",
    "StorageError",
    "Store",
    "Suspended",
    "Workflow",
    "artifact",
    "asleep",
    "current_run",
    "gc",
    "loop_over",
    "open_store",
    "redact",
    "sleep",
    "step",
    "stop_on_signals",
    "suspend",
    "workflow",
]
