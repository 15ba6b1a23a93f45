"""`@durable.workflow`: a function whose steps are recorded and replayed."""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

from .._calls import an_option, at_callers, callers, keywords
from .._core.arguments import check_overrides, derive_run_id
from .._core.context import Run, caller_run
from .._core.definition import Definition
from .._core.plan import Plan, drive_sync
from .._core.recall import recalled
from .._core.run import Options, run_locked
from .._core.signature import signature_of
from .._core.waiting import holding
from .._fanout import progress  # noqa: F401  (its bars subscribe to the event stream)
from .._fingerprint.fingerprint import identity_of
from .._fingerprint.madewith import same_snapshots
from .._storage.base import Store
from .._storage.factory import open_store
from .._storage.fence import Held
from .._storage.keycheck import check_key_part
from ..errors import ConfigurationError
from .bound import Bound, BoundWorkflow, Takes
from .chosen import chosen
from .definition import definition_of, own_fingerprint
from .naming import default_workflow_name, holder, started_other_way, twin_names, twin_runs
from .options import check_options
from .progress_file import following, progress_path
from .retention import prune
from .steer import Steering
from .takes import said_takes

if TYPE_CHECKING:  # run management loads when a method below is called
    from .._manage.history import StepInfo
    from .._manage.runs import RunInfo

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")
S = TypeVar("S")


class Workflow(Steering, Generic[P, R]):
    """A decorated workflow function. Call it to run durably."""

    __durable_workflow__ = True  # how a definition tells a workflow it reaches

    def __init__(
        self, fn: Callable[..., Any], name: str | None, version: str | None, options: Options
    ) -> None:
        options = check_options(options)
        self.fn = fn
        self._pinned_name = name  # kept as given: with_options() must not drop it
        self.name = check_key_part("workflow name", name or default_workflow_name(fn))
        if self.name == "cache":
            raise ConfigurationError(
                "the workflow name 'cache' is reserved for the step cache's area of the "
                "store; give the workflow another name with @durable.workflow(name=...)"
            )
        self.version = version
        self.options = options
        self._identity = identity_of(fn, name)
        # The names its runs have when its file is started the other way (`naming`).
        self._twin, self._other = twin_names(fn, name)
        self.__wrapped__ = fn
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(self, attr, getattr(fn, attr, None))

    # -- the two calls ---------------------------------------------------
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return drive_sync(self._call_plan(args, kwargs))

    def run(self, *args: P.args, **kwargs: P.kwargs) -> Run[R]:
        return drive_sync(self._plan(args, kwargs))

    # Through the class: Any, as a checker cannot tell it from @classmethod's
    # binding. Through an instance, as a step's (`Takes`, static and class methods).
    @overload
    def __get__(self, obj: None, owner: type | None = None, /) -> Any: ...
    @overload
    def __get__(self: Takes[S, P2, R], obj: S, owner: type | None = None, /) -> Bound[P2, R]: ...
    @overload
    def __get__(
        self: Takes[type[S], P2, R], obj: S, owner: type | None = None, /
    ) -> Bound[P2, R]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None, /) -> Workflow[P, R]: ...
    def __get__(self, obj: object, owner: type | None = None) -> Any:
        # In a class body a workflow is a method, as a function is (bound.py).
        return self if obj is None else BoundWorkflow(self, obj)

    @said_takes
    def resume(
        self, run_id: str, /, *, inputs: dict[str, Any] | None = None, **overrides: Any
    ) -> Run[R]:
        """Continue an existing run; `RunNotFoundError` when there is none.
        `inputs` answer its `durable.wait_for(name)` calls; overrides replace
        recorded arguments (a dict or `**kwargs` one is merged by key)."""
        return drive_sync(self._plan((), {}, resume_id=run_id, overrides=overrides, inputs=inputs))

    @keywords("with_options")
    def with_options(
        self,
        *,
        run_id: str | Callable[..., str] | None = None,
        store: Store | str | os.PathLike[str] | None = None,
        restart: bool | None = None,
        rebase: bool | None = None,
        on_change: str | None = None,
        wait: float | None = None,
        progress_file: str | os.PathLike[str] | None = None,
        durability: str | None = None,
    ) -> Workflow[P, R]:
        given: dict[str, Any] = {
            "run_id": run_id, "store": store, "restart": restart, "rebase": rebase,
            "on_change": on_change, "wait": wait, "progress_file": progress_file,
            "durability": durability,
        }  # fmt: skip
        changes = {key: value for key, value in given.items() if value is not None}
        return type(self)(
            self.fn, self._pinned_name, self.version, dataclasses.replace(self.options, **changes)
        )

    # -- run management (`_manage`, also behind the CLI) --------------------
    @at_callers
    def runs(self, *, status: str | Iterable[str] | None = None) -> list[RunInfo]:
        """This workflow's runs in its store (of `status`, one or several), newest first
        (`naming.twin_runs`: imported from a script's module, the script's runs too)."""
        return twin_runs(self._store(), self.name, self._twin, status)

    @at_callers
    def history(self, run_id: str, /) -> list[StepInfo]:
        """What each position of a run did, in position order (of one
        `runs()` lists under the script's name too)."""
        from .._manage.history import history
        store = self._store()
        return history(store, holder(store, self.name, self._twin, run_id), run_id)

    @at_callers
    def delete(self, run_id: str, /) -> None:
        """Remove a run's records; `RunLockedError` while a process runs it."""
        from .._manage.delete import delete_run
        delete_run(self._store(), self.name, run_id)

    @said_takes
    def fork(
        self,
        run_id: str,
        /,
        at: int,
        *,
        new_run_id: str | None = None,
        mutate: Callable[[Any], Any] | None = None,
        **overrides: Any,
    ) -> Run[R]:
        """A new run with the source's records before position `at` (`mutate`
        replaces the output at `at - 1`), then run from `at`. The source run
        is not touched."""
        return self.resume(self._fork(run_id, at, new_run_id, mutate), **overrides)

    def _fork(
        self, run_id: str, at: int, new_run_id: str | None, mutate: Callable[[Any], Any] | None
    ) -> str:
        from .._manage.fork import fork_run
        made = fork_run(self._store(), self.name, run_id, at, new_run_id=new_run_id, mutate=mutate)
        return same_snapshots((self.name, run_id), made)  # its records were made under them

    # -- identity --------------------------------------------------------
    @property
    def __durable_fingerprint__(self) -> str:
        return self.definition().fingerprint

    @property
    def __durable_body_fingerprint__(self) -> str:
        """What this workflow counts for in a step that reaches it
        (`reach.reached_stamp_of`): its body, not its whole definition."""
        return own_fingerprint(self).value

    @property
    def fingerprint(self) -> str:
        """The definition fingerprint: this body and every step it can reach."""
        return self.definition().fingerprint

    def definition(self) -> Definition:
        """The definition as of now (see `definition_of`)."""
        return definition_of(self)

    # -- the run ---------------------------------------------------------
    def _call_plan(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Plan[R]:
        run = yield from self._plan(args, kwargs)
        return run.value

    def _plan(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        resume_id: str | None = None,
        overrides: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
    ) -> Plan[Run[R]]:
        outer = caller_run()
        if outer is not None:  # a child run: its module loaded by the first
            from .child import child_plan
            return (yield from child_plan(self, outer, args, kwargs))
        # Checked before anything else (none given: nothing to check); a re-call merges by it.
        checked = check_overrides(self.fn, overrides) if overrides else None
        given = None if resume_id is not None else self._bind(args, kwargs)
        run_id = self._run_id(given) if resume_id is None else check_key_part("run id", resume_id)
        store = self._store()  # only once the call is known to be valid
        raw = store.peek_manifest(self.name, run_id)
        if raw is None and (other := started_other_way(self, store, given, resume_id)) is not None:
            return (yield from other._plan(args, kwargs, resume_id=resume_id, overrides=overrides, inputs=inputs))
        if resume_id is not None and raw is None:
            from .._manage.runs import not_found  # run management: on this error path only

            raise not_found(store, self.name, run_id, resuming=True)
        quiet = not inputs and progress_path(self.options.progress_file) is None
        done = recalled(self, store, run_id, given, overrides or {}, raw, checked) if raw and quiet else None
        if done is not None:  # a completed run's result, for this very call
            return done

        def locked(lease: Held) -> Plan[Run[R]]:
            with following(self.options.progress_file, store, self.name, run_id):
                done = yield from run_locked(
                    self, store, run_id, given, overrides or {}, lease, inputs=inputs
                )
            prune(store, self.name, self.options)
            return done

        plan = holding(store, self.name, run_id, self.options.wait, locked)
        return (yield from chosen(self.options.run_id, run_id, given, plan))

    # -- helpers ---------------------------------------------------------
    def _store(self) -> Store:
        store = self.options.store  # None: configure(store=), $DURABLE_STORE, ./.durable
        return store if isinstance(store, Store) else open_store(store)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
        signature = signature_of(self.fn)  # a TypeError here is durable's, not the call's
        try:
            return signature.bind(*args, **kwargs)
        except TypeError as e:  # `wf(1, run_id="r1")`: said where that option goes
            said = an_option(getattr(self.fn, "__name__", "wf"), [k for k in kwargs if k not in signature.parameters])
            raise callers(TypeError(f"{self.name}(): {e}{said}")) from None

    def _run_id(self, given: inspect.BoundArguments | None) -> str:
        assert given is not None
        return derive_run_id(self.name, self.options.run_id, given)

    def __repr__(self) -> str:
        return f"<durable workflow {self.name}>"


def store_of(wf: Workflow[Any, Any]) -> Store:
    """The store a workflow's runs go to (its option, else the default)."""
    return wf._store()


def bind_call(wf: Workflow[Any, Any], kwargs: dict[str, Any]) -> inspect.BoundArguments:
    """A call of wf with these keyword arguments, bound; TypeError if it cannot be."""
    return wf._bind((), kwargs)


def run_id_of(wf: Workflow[Any, Any], bound: inspect.BoundArguments) -> str:
    """The run id the call would have (given, or derived from its arguments)."""
    return wf._run_id(bound)
