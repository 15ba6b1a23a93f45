"""durable: make ordinary Python functions resumable.

Decorate a function with `@durable.workflow` and the functions it calls with
`@durable.step`; each step's output is recorded, so calling the workflow again
with the same run id skips the finished steps and continues from the first
one that did not finish."""

from ._artifacts import artifact
from ._blocks import asleep, loop_over, sleep, suspend
from ._cache import Cache
from ._cache_admin import CacheInfo, cache_info
from ._context import Run, RunContext, current_run
from ._errors import (
    ArtifactMissingError,
    ConfigurationError,
    CorruptRecordError,
    DefinitionChangedError,
    DurableError,
    IntegrityError,
    LeaseLostError,
    NondeterminismError,
    RunLockedError,
    RunNotFoundError,
    SerializationError,
    StorageError,
    Suspended,
)
from ._history import StepInfo
from ._progress import Progress
from ._redact import Redacted, redact
from ._runs import RunInfo, gc
from ._signals import stop_on_signals
from ._step import Step, step
from ._store import Store, open_store
from ._workflow import AsyncWorkflow, Workflow, workflow

__version__ = "0.1.0.dev0"

__all__ = [
    "ArtifactMissingError",
    "AsyncWorkflow",
    "Cache",
    "CacheInfo",
    "ConfigurationError",
    "CorruptRecordError",
    "DefinitionChangedError",
    "DurableError",
    "IntegrityError",
    "LeaseLostError",
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
    "cache_info",
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
