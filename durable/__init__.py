"""durable: make ordinary Python functions resumable.

Decorate a function with `@durable.workflow` and the functions it calls with
`@durable.step`; each step's output is recorded, so calling the workflow again
with the same run id skips the finished steps and continues from the first
one that did not finish.

This module is the one public door. The errors are imported at once; every
other name is imported from its module on first use, so that run management
(`durable runs`, `durable show`) never loads the engine."""

import importlib as _importlib
import typing as _typing
from typing import Any as _Any

from .errors import (
    ArtifactMissingError,
    Cancelled,
    ConfigurationError,
    ControlFlow,
    CorruptRecordError,
    DefinitionChangedError,
    DurableError,
    IntegrityError,
    LeaseLostError,
    NondeterminismError,
    RunKilledError,
    RunLockedError,
    RunNotFoundError,
    SerializationError,
    Stopped,
    StorageError,
    Suspended,
    ValidationError,
)

# `_typing.TYPE_CHECKING`, not an alias of it: mypy takes no alias for it, read
# both branches, and so __getattr__: `durable.anything` was an Any, no error.
if _typing.TYPE_CHECKING:
    from ._api.asyncworkflow import AsyncWorkflow
    from ._api.decorate import workflow
    from ._api.load import load
    from ._api.ops import asleep, loop_over, sleep, suspend, wait_for
    from ._api.signals import clear_stop, request_stop, stop_on_signals, stop_requested
    from ._api.step import Step, step
    from ._api.workflow import Workflow
    from ._core.artifacts import artifact
    from ._core.cacheoption import Cache
    from ._core.context import Run, RunContext, current_run
    from ._core.events import on_event
    from ._core.redact import Redacted, redact
    from ._fanout.progress import Progress
    from ._manage.cache import CacheInfo, cache_info
    from ._manage.cancel import Cancellation
    from ._manage.cleanup import gc
    from ._manage.history import StepInfo
    from ._manage.runs import RunInfo
    from ._settings import configure
    from ._storage.base import Store
    from ._storage.factory import open_store
    from ._storage.recordlog import KeyStore

__version__ = "0.1.0.dev0"

__all__ = [
    "ArtifactMissingError",
    "AsyncWorkflow",
    "Cache",
    "CacheInfo",
    "Cancellation",
    "Cancelled",
    "ConfigurationError",
    "ControlFlow",
    "CorruptRecordError",
    "DefinitionChangedError",
    "DurableError",
    "IntegrityError",
    "KeyStore",
    "LeaseLostError",
    "NondeterminismError",
    "Progress",
    "Redacted",
    "Run",
    "RunContext",
    "RunInfo",
    "RunKilledError",
    "RunLockedError",
    "RunNotFoundError",
    "SerializationError",
    "Step",
    "StepInfo",
    "Stopped",
    "StorageError",
    "Store",
    "Suspended",
    "ValidationError",
    "Workflow",
    "artifact",
    "asleep",
    "cache_info",
    "clear_stop",
    "configure",
    "current_run",
    "gc",
    "load",
    "loop_over",
    "on_event",
    "open_store",
    "redact",
    "request_stop",
    "sleep",
    "step",
    "stop_on_signals",
    "stop_requested",
    "suspend",
    "wait_for",
    "workflow",
]

# Where each name that is not an error lives (the imports above, for type
# checkers and import-linter, say the same).
_HOMES = {
    "load": "._api.load",
    "asleep": "._api.ops",
    "loop_over": "._api.ops",
    "sleep": "._api.ops",
    "suspend": "._api.ops",
    "wait_for": "._api.ops",
    "clear_stop": "._api.signals",
    "request_stop": "._api.signals",
    "stop_on_signals": "._api.signals",
    "stop_requested": "._api.signals",
    "Step": "._api.step",
    "step": "._api.step",
    "AsyncWorkflow": "._api.asyncworkflow",
    "Workflow": "._api.workflow",
    "Cancellation": "._manage.cancel",
    "workflow": "._api.decorate",
    "artifact": "._core.artifacts",
    "Cache": "._core.cacheoption",
    "Run": "._core.context",
    "RunContext": "._core.context",
    "current_run": "._core.context",
    "on_event": "._core.events",
    "Redacted": "._core.redact",
    "redact": "._core.redact",
    "Progress": "._fanout.progress",
    "CacheInfo": "._manage.cache",
    "cache_info": "._manage.cache",
    "StepInfo": "._manage.history",
    "RunInfo": "._manage.runs",
    "gc": "._manage.cleanup",
    "Store": "._storage.base",
    "open_store": "._storage.factory",
    "configure": "._settings",
    "KeyStore": "._storage.recordlog",
}

# The public modules besides this one, loaded when first named.
_SUBMODULES = frozenset({"events", "testing"})

# Names a user reaches for on the module, from the command line (`durable
# runs`) or another library, that are methods of a workflow: the call meant.
_WORKFLOW_METHODS = {
    "runs": "runs()", "history": "history(RUN_ID)", "show": "history(RUN_ID)", "fork": "fork(RUN_ID, at=N)",
    "resume": "resume(RUN_ID)", "delete": "delete(RUN_ID)", "rm": "delete(RUN_ID)", "cancel": "cancel(RUN_ID)",
    "recover": "recover()", "run": "run(...)", "with_options": "with_options(...)",
}

if not _typing.TYPE_CHECKING:

    def __getattr__(name: str) -> _Any:
        if name in _SUBMODULES:  # `durable.events.StepExecuted` after `import durable` alone
            return _importlib.import_module(f".{name}", __name__)
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module 'durable' has no attribute {name!r}" + _method_hint(name))
        value = getattr(_importlib.import_module(home, __name__), name)
        globals()[name] = value  # once loaded, an ordinary attribute
        return value

    def _method_hint(name: str) -> str:
        call = _WORKFLOW_METHODS.get(name)
        if call is None:
            return ""
        every = " (`durable runs` lists every workflow's from a shell)" if name == "runs" else ""
        return f": call the method of the workflow, my_workflow.{call}{every}"

    # Every other name raises: told to the fingerprint walk (`reach.may_answer`),
    # which then asks for none of them (an AttributeError a name, each re-call).
    __getattr__.__durable_answers__ = frozenset(_HOMES) | _SUBMODULES  # type: ignore[attr-defined]

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
