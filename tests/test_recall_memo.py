"""A completed run's re-call resolves the workflow's definition through a
memo (`_api.definition`, by the one memo rule of `_fingerprint.memo`) and
binds its arguments through a memoised signature (`_core.signature`). Every
way the definition or the signature can change in the running process
after a memoised re-call is still seen: the next re-call is refused (never
the recorded value), nothing executes (counted), and the memoised definition
equals one computed from scratch."""

from __future__ import annotations

import inspect
import os
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._api import definition as definition_module
from durable._core.signature import call_signature, signature_inputs, signature_of
from durable._fingerprint import memo as memo_module
from durable._storage.manifest import read_manifest
from durable.errors import ConfigurationError

from .clikit import MEMO_HELPER_CHANGES, import_memo_module, memo_source, run_cells

MODULE = memo_source(
    """\
import durable
import recall_cfg as cfg

""",
    "BODY_CONST = 10\n",
    """\


@durable.step
def work(x):
    RUNS.append("work")
    return helper(x) * Cfg.SCALE + HANDLERS["a"](x) + sum(TABLE) + scaler(x) + cfg.FACTOR


@durable.step
def other_work(x):
    RUNS.append("other_work")
    return -x


def plain_work(x):
    RUNS.append("work")
    return 2 * x


def body_helper(x):
    return x * 3


@durable.workflow(run_id="r")
def flow(x=1):
    RUNS.append("flow")  # program state
    return work(x) + body_helper(x) + BODY_CONST


def alt_flow(x=1):
    RUNS.append("flow")
    return work(x) + BODY_CONST


class Namespace:
    def __init__(self, **members):
        self.__dict__.update(members)


NS = Namespace(work=plain_work)


@durable.workflow(run_id="by_name")
def by_name(x=1):
    # `NS.work` is an attribute of an object, but the name `work` is also a
    # global step: the reach walk counts it (by name), the fingerprint not.
    return NS.work(x)


@durable.workflow(run_id="outer")
def outer(x=1):
    RUNS.append("outer")
    return flow(x) + 1
""",
)


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    store = str(tmp_path / "store")
    yield from import_memo_module(tmp_path, monkeypatch, "recall_mod", MODULE, "recall_cfg", store)


def from_scratch(flow: Any) -> str:
    """The definition fingerprint with every memo emptied first."""
    definition_module._DEFINITIONS.clear()
    memo_module._MEMO.clear()
    return str(flow.definition().fingerprint)


def completed_and_recalled(mod: types.ModuleType, flow: Any) -> Any:
    """Run `flow` to completion, then re-call it twice: the re-calls execute
    nothing and are answered through a memoised definition."""
    value = flow()
    runs = len(mod.RUNS)
    assert flow() == flow() == value
    assert len(mod.RUNS) == runs
    return value


def _rebind_step(m: types.ModuleType) -> None:
    m.work = m.other_work  # the body now reaches another step


def _rebind_body_helper(m: types.ModuleType) -> None:
    m.body_helper = m.other_helper


def _rebind_body_constant(m: types.ModuleType) -> None:
    m.BODY_CONST = 11


def _replace_body_code(m: types.ModuleType) -> None:
    m.flow.fn.__code__ = m.alt_flow.__code__


def _replace_step_code(m: types.ModuleType) -> None:
    m.work.__durable_step__.fn.__code__ = m.plain_work.__code__


def _change_body_defaults(m: types.ModuleType) -> None:
    m.flow.fn.__defaults__ = (2,)


CHANGES: dict[str, Callable[[types.ModuleType], None]] = {
    **{f"step's {what}": change for what, change in MEMO_HELPER_CHANGES.items()},
    "step rebound at module level": _rebind_step,
    "body's helper rebound": _rebind_body_helper,
    "body's constant rebound": _rebind_body_constant,
    "workflow __code__ replaced": _replace_body_code,
    "step __code__ replaced": _replace_step_code,
    "workflow defaults replaced": _change_body_defaults,
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_a_change_after_memoised_recalls_is_refused(mod: types.ModuleType, what: str) -> None:
    completed_and_recalled(mod, mod.flow)
    before, runs = from_scratch(mod.flow), len(mod.RUNS)
    completed_and_recalled(mod, mod.flow)  # memoised again
    CHANGES[what](mod)
    for _ in range(2):  # refused again: the refusal is not memoised either
        with pytest.raises(durable.DefinitionChangedError):
            mod.flow()
    assert len(mod.RUNS) == runs  # nothing executed
    memoised = mod.flow.definition().fingerprint
    assert memoised != before
    assert memoised == from_scratch(mod.flow)


def test_no_change_keeps_the_memo_and_its_answer(mod: types.ModuleType) -> None:
    value = completed_and_recalled(mod, mod.flow)
    fp = mod.flow.definition().fingerprint
    mod.RUNS.extend(range(5))  # program state: never a change
    runs = len(mod.RUNS)
    assert mod.flow() == value
    assert len(mod.RUNS) == runs
    assert fp == mod.flow.definition().fingerprint == from_scratch(mod.flow)


def test_a_change_reached_through_a_nested_workflow_is_refused(mod: types.ModuleType) -> None:
    completed_and_recalled(mod, mod.outer)
    runs = len(mod.RUNS)
    mod.LIMIT = 5  # read by a helper of a step of the workflow `outer` calls
    with pytest.raises(durable.DefinitionChangedError):
        mod.outer()
    assert len(mod.RUNS) == runs
    assert mod.outer.definition().fingerprint == from_scratch(mod.outer)


def test_a_step_reached_by_name_alone_is_followed(mod: types.ModuleType) -> None:
    completed_and_recalled(mod, mod.by_name)
    runs = len(mod.RUNS)
    mod.work = mod.other_work
    with pytest.raises(durable.DefinitionChangedError, match="other_work"):
        mod.by_name()
    assert len(mod.RUNS) == runs
    assert mod.by_name.definition().fingerprint == from_scratch(mod.by_name)


def test_a_with_options_copy_shares_the_memo_and_its_checks(mod: types.ModuleType) -> None:
    completed_and_recalled(mod, mod.flow.with_options(run_id="copy"))
    runs = len(mod.RUNS)
    mod.body_helper = mod.other_helper
    with pytest.raises(durable.DefinitionChangedError):
        mod.flow.with_options(run_id="copy")()
    assert len(mod.RUNS) == runs


def test_a_source_file_edited_after_memoised_recalls_is_refused(mod: types.ModuleType) -> None:
    value = completed_and_recalled(mod, mod.flow)
    runs = len(mod.RUNS)
    path = Path(mod.__file__ or "")
    path.write_text(MODULE.replace("x * 3", "x * 4"))
    for _ in range(2):
        with pytest.raises(ConfigurationError, match="no longer matches the running code"):
            mod.flow()
    assert len(mod.RUNS) == runs
    path.write_text(MODULE.replace("# program", "# the program"))  # comments only
    assert mod.flow() == value  # the running code's source again: answered as before
    assert len(mod.RUNS) == runs


# ---------------------------------------------------------------- signatures


def _defaults(fn: Any) -> None:
    fn.__defaults__ = (5,)


def _kwdefaults_in_place(fn: Any) -> None:
    fn.__kwdefaults__["k"] = 7


def _annotations_in_place(fn: Any) -> None:
    fn.__annotations__["x"] = "float"


def _signature_attribute(fn: Any) -> None:
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=9)]
    )


def _wrapped(fn: Any) -> None:
    def other(x: int = 8) -> int:
        return x

    fn.__wrapped__ = other


def _code(fn: Any) -> None:
    def other(x: int = 1, y: int = 2, *, k: int = 3) -> int:
        return x

    fn.__code__ = other.__code__


SIGNATURE_CHANGES = {
    "__defaults__ replaced": _defaults,
    "__kwdefaults__ changed in place": _kwdefaults_in_place,
    "__annotations__ changed in place": _annotations_in_place,
    "__signature__ set": _signature_attribute,
    "__wrapped__ set": _wrapped,
    "__code__ replaced": _code,
}


@pytest.mark.parametrize("what", sorted(SIGNATURE_CHANGES))
def test_a_memoised_signature_follows_every_change(what: str) -> None:
    def fn(x: int = 1, *, k: int = 3) -> int:
        return x + k

    assert signature_of(fn) is signature_of(fn)  # memoised
    before = signature_of(fn)
    SIGNATURE_CHANGES[what](fn)
    if what == "__wrapped__ set":  # fn takes the call by parameters of its own (`call_signature`)
        assert signature_of(fn) == call_signature(fn) == before != inspect.signature(fn)
    else:
        assert signature_of(fn) == inspect.signature(fn) != before


def test_a_memoised_signature_follows_a_function_a_pass_through_wraps() -> None:
    """A wrapper handing its arguments on (*args, **kwargs) binds a call by
    the function it wraps: the memo follows `__wrapped__` set after it."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        return args, kwargs

    assert signature_of(fn) is signature_of(fn)  # memoised
    before = signature_of(fn)
    _wrapped(fn)
    assert signature_of(fn) == inspect.signature(fn) != before


def test_a_workflow_binds_its_new_defaults(tmp_path: Path) -> None:
    """A derived run id over the bound arguments: a stale signature would
    answer the new call with the old run's value."""
    runs: list[int] = []

    @durable.workflow(store=durable.open_store(tmp_path / "store"))
    def flow(x: int = 1, *, k: int = 10) -> int:
        runs.append(x + k)
        return x + k

    assert flow() == flow() == 11
    assert runs == [11]
    fn: Any = flow.fn
    fn.__kwdefaults__["k"] = 20
    assert flow() == flow() == 21
    fn.__defaults__ = (2,)
    assert flow() == 22
    assert runs == [11, 21, 22]


def test_a_recall_resolves_the_signature_once(tmp_path: Path) -> None:
    """The call is bound against the signature as it is now; merging the
    arguments reuses that one instead of checking the memo a second time
    (what `signature_of` checks is counted: once per re-call)."""
    runs: list[int] = []

    @durable.workflow(store=durable.open_store(tmp_path / "store"), run_id="r")
    def flow(x: int = 1) -> int:
        runs.append(x)
        return x

    assert flow() == flow() == 1
    checks: list[str] = []
    code = signature_inputs.__code__

    def count(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is code:
            checks.append(event)

    sys.setprofile(count)
    try:
        assert flow() == 1
    finally:
        sys.setprofile(None)
    assert (len(checks), runs) == (1, [1])


# ---------------------------------------------------------------- the plan


def test_a_reopened_run_keeps_the_plan_it_did_not_decode(tmp_path: Path) -> None:
    """A re-call reads the manifest's plan unexpanded; a run that goes on
    writes it back whole (what `durable show` lists as still to come)."""
    store = durable.open_store(tmp_path / "store")
    fail = [False]

    @durable.step
    def one(i: int) -> int:
        if fail[0] and i == 3:
            raise RuntimeError("boom")
        return i

    @durable.workflow(store=store, run_id="p", on_change="rerun")
    def flow(n: int) -> int:
        return sum(one(i) for i in range(n))

    assert flow(3) == flow(3) == 3
    manifest = read_manifest(store, flow.name, "p")
    assert manifest is not None
    plan = manifest.plan
    assert plan is not None and len(plan) == 3
    fail[0] = True
    with pytest.raises(RuntimeError, match="boom"):
        flow(4)  # other arguments under "rerun": the run goes on, and fails
    after = read_manifest(store, flow.name, "p")
    assert after is not None and after.status == "failed"
    assert after.plan == plan


# ---------------------------------------------------------------- notebook cells


CELLS = [
    "import durable\nRUNS = []\n\ndef helper(x):\n    return x + 1\n",
    textwrap.dedent(
        """\
        @durable.step
        def total(n):
            RUNS.append(n)
            return helper(n)

        @durable.workflow(run_id="nb")
        def flow(n=1):
            return total(n)
        """
    ),
    "print('RESULT', flow(), flow(), flow(), len(RUNS))",
    # A later cell redefines the helper the step calls.
    "def helper(x):\n    return x + 2\n",
    textwrap.dedent(
        """\
        try:
            flow()
        except durable.DefinitionChangedError:
            print('RESULT refused', len(RUNS))
        """
    ),
]


def test_a_notebook_cell_that_redefines_a_helper_is_seen_after_recalls(tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    done = run_cells(tmp_path, CELLS)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines == ["RESULT 2 2 2 1", "RESULT refused 1"], done.stdout + done.stderr


# ---------------------------------------------------------------- odd objects


class Odd:
    """Hashable, but equality raises (an array-like): two of them collide."""

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise ValueError("the truth value is ambiguous")


ODD_A, ODD_B = Odd(), Odd()


def test_objects_whose_equality_raises_are_witnessed(tmp_path: Path) -> None:
    runs: list[int] = []

    @durable.step
    def one(x: int) -> int:
        runs.append(x)
        return x

    @durable.workflow(store=durable.open_store(tmp_path / "store"), run_id="odd")
    def flow() -> int:
        return one(1) if (ODD_A, ODD_B) else 0

    assert flow() == flow() == flow() == 1
    assert runs == [1]


def test_a_module_or_built_in_callable_is_told_durable_as_getattr_static_tells_it() -> None:
    """`is_durable` answers for modules and built-in callables from the
    object's own `__dict__` (or that it has none), not `getattr_static`,
    which costs a re-call's memo check most of its time. The answers must be
    the same, and must follow a module given the attribute later: neither
    these types nor built-in callables can be given one."""
    from durable._fingerprint.reach import is_durable

    missing = object()
    module = types.ModuleType("made_here")
    built_in = [len, sys.getrecursionlimit, (1).__add__, object.__init__, str.join]
    built_in.append(dict.__dict__["fromkeys"])
    for obj in [module, inspect, *built_in]:
        told = inspect.getattr_static(obj, "__durable_fingerprint__", missing) is not missing
        assert is_durable(obj) is told is False
    module.__durable_fingerprint__ = "fp"  # type: ignore[attr-defined]
    assert is_durable(module) and inspect.getattr_static(module, "__durable_fingerprint__")
    for fixed in (*built_in, types.ModuleType, types.BuiltinFunctionType):
        with pytest.raises((AttributeError, TypeError)):
            fixed.__durable_fingerprint__ = "fp"  # type: ignore[union-attr]


def test_a_module_is_followed_as_the_generic_rule_follows_it() -> None:
    """`_followable` answers for a plain module from its `__dict__`; one
    that holds `__wrapped__`, `__func__` or `__getattr__` takes the generic
    path, which may unwrap it to a function of the user's."""
    from durable._fingerprint.reach import _followable, is_user_code

    def users_own() -> int:
        return 1

    assert is_user_code(users_own)  # type: ignore[arg-type]
    for built_in in (len, str.join, (1).__add__, types, sys):
        assert not _followable(built_in)
    for hook in ("__wrapped__", "__func__"):
        module = types.ModuleType(f"with{hook}")
        assert not _followable(module)
        setattr(module, hook, users_own)
        assert _followable(module)
    lazy = types.ModuleType("lazy")
    lazy.__getattr__ = lambda name: users_own if name == "__wrapped__" else None  # type: ignore[attr-defined]
    assert _followable(lazy)
    stamped = types.ModuleType("stamped")
    stamped.__durable_fingerprint__ = "fp"  # type: ignore[attr-defined]
    assert _followable(stamped)


def test_a_modules_members_are_what_getattr_finds() -> None:
    """`_members` reads a plain module's names from its `__dict__` (no
    exception per missing name), and asks `getattr` for a dunder name or
    when the module answers for names itself (`__getattr__`, PEP 562)."""
    from durable._fingerprint.references import _members

    names = ("present", "absent", "__name__", "__class__", "lazy_one")
    module = types.ModuleType("plain")
    module.present = 1  # type: ignore[attr-defined]
    lazy = types.ModuleType("lazy")
    lazy.present = 2  # type: ignore[attr-defined]
    lazy.__getattr__ = lambda n: 3 if n == "lazy_one" else getattr(None, n)  # type: ignore[attr-defined]
    for obj in (module, lazy, durable):
        missing = object()
        expected = tuple(v for n in names if (v := getattr(obj, n, missing)) is not missing)
        assert _members(obj, names) == expected
    assert _members(lazy, names) == (2, "lazy", types.ModuleType, 3)


def test_durables_own_module_is_asked_for_no_name_it_does_not_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`durable`'s `__getattr__` lists the names it answers
    (`__durable_answers__`): a completed run's re-call, whose body names
    `durable.suspend`, asks it for none of the body's other names (an
    AttributeError raised and caught for each), and the members found are
    what `getattr` finds."""
    from durable._fingerprint.reach import _followable
    from durable._fingerprint.references import _members

    real = durable.__dict__["__getattr__"]
    asked: list[str] = []

    def counted(name: str) -> Any:
        asked.append(name)
        return real(name)

    counted.__durable_answers__ = real.__durable_answers__  # type: ignore[attr-defined]

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow(go: bool = True) -> int:
        if not go:
            durable.suspend("waiting")
        return sum(range(3))

    assert flow() == 3
    monkeypatch.setitem(durable.__dict__, "__getattr__", counted)
    assert flow() == 3
    assert asked == []
    names = ("suspend", "sum", "range", "nope", "events", "gc", "__name__", "__wrapped__")
    missing = object()
    expected = tuple(v for n in names if (v := getattr(durable, n, missing)) is not missing)
    asked.clear()
    assert _members(durable, names) == expected
    assert asked == ["__wrapped__"]  # a dunder name: the type may hold it
    assert not _followable(durable)


class _AllEqual:
    """Equal to everything: a user's `__eq__` must not merge two witnessed calls."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


def test_a_witness_checks_each_distinct_call_once_and_merges_none_by_eq() -> None:
    from durable._fingerprint.witness import Witness

    held: list[Any] = []
    a, b = _AllEqual(), _AllEqual()
    w = Witness()
    for _ in range(3):  # one namespace list read by three fingerprints: checked once
        w.add(list, (held,), [])
    w.add(id, (a,), id(a))
    w.add(id, (b,), id(b))  # equal to `a` by its __eq__, yet another object: kept
    assert len(w.calls) == 3 and w.holds()
    held.append(print)
    assert not w.holds()


def test_a_call_that_gave_another_value_while_recorded_keeps_both() -> None:
    from durable._fingerprint.witness import Witness

    box = {"x": 1}
    w = Witness()
    w.add(box.get, ("x",), 1)
    box["x"] = 2
    w.add(box.get, ("x",), 2)  # changed meanwhile: both are checked
    assert len(w.calls) == 2 and not w.holds()
    box["x"] = 1  # back as first seen: the second check still fails
    assert not w.holds()


def test_a_files_state_changes_with_each_part_of_its_stat(tmp_path: Path) -> None:
    """`file_state` (what tells a source file's text in a memo's witness)
    changes when the file is touched, grown or replaced, also when its
    dates lie past what a 64-bit count of nanoseconds holds."""
    from durable._fingerprint.witness import file_state, same

    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    states = [file_state(str(path))]
    assert same(file_state(str(path)), states[0])
    os.utime(path, ns=(10**9, 10**9))  # touched: the same text, another time
    states.append(file_state(str(path)))
    path.write_text("x = 22\n")  # grown
    states.append(file_state(str(path)))
    far = 330 * 365 * 86400 * 10**9  # the year 2300: past 2**63 nanoseconds
    os.utime(path, ns=(far, far))
    states.append(file_state(str(path)))
    assert same(file_state(str(path)), states[-1])
    path.rename(tmp_path / "old.py")  # replaced by another file
    path.write_text("x = 22\n")
    os.utime(path, ns=(far, far))
    states.append(file_state(str(path)))
    assert not any(same(a, b) for i, a in enumerate(states) for b in states[i + 1 :])
