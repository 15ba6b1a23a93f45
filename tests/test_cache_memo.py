"""The memo of a step's fresh fingerprint (`_fingerprint.memo`): a cached
plain call reuses the last fingerprint only while nothing it was computed
from changed. Every way the fingerprint can change after a memoised call
still changes it: the step body's executions are counted across each
change, and the memoised fingerprint is compared with one computed from
scratch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._fingerprint.fingerprint import fingerprint_function
from durable._fingerprint.memo import memo_fingerprint
from durable.errors import ConfigurationError

from .clikit import MEMO_HELPER_CHANGES, import_memo_module, memo_source, run_cells

REPO = Path(__file__).resolve().parents[1]

MODULE = memo_source(
    """\
import durable
import memo_cfg as cfg

""",
    "OFFSETS = (1, 2)\n",
    """\


@durable.step(cache=True)
def work(x):
    RUNS.append(x)  # program state: appending never changes the fingerprint
    total = helper(x) * Cfg.SCALE + HANDLERS["a"](x) + sum(TABLE) + scaler(x)
    return total + OFFSETS[0] + cfg.FACTOR
""",
)


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    store = f"memory://memo-{uuid.uuid4().hex}"
    yield from import_memo_module(tmp_path, monkeypatch, "memo_mod", MODULE, "memo_cfg", store)


def fresh(mod: types.ModuleType) -> str:
    """The memoised fingerprint, checked against one computed from scratch."""
    fn = mod.work.__durable_step__.fn
    memo = memo_fingerprint(fn).value
    assert memo == fingerprint_function(fn).value
    return memo


def calls_after(mod: types.ModuleType, change: Any) -> tuple[int, int]:
    """Executions of `work(5)` in two calls after `change`, and whether the
    fingerprint changed."""
    before_fp, before = fresh(mod), len(mod.RUNS)
    change(mod)
    mod.work(5)
    mod.work(5)
    return len(mod.RUNS) - before, int(fresh(mod) != before_fp)


def _rebind_tuple(m: types.ModuleType) -> None:
    m.OFFSETS = (4, 2)


def _rebind_scaler(m: types.ModuleType) -> None:
    m.scaler = m.make_scaler(4)


CHANGES = {
    **MEMO_HELPER_CHANGES,
    "tuple constant rebound": _rebind_tuple,
    "closure rebound": _rebind_scaler,
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_a_change_after_a_memoised_hit_runs_the_step_again(
    mod: types.ModuleType, what: str
) -> None:
    assert mod.work(5) == mod.work(5)
    assert len(mod.RUNS) == 1  # the second call was a hit, fingerprint memoised
    assert calls_after(mod, CHANGES[what]) == (1, 1)
    assert calls_after(mod, lambda m: None) == (0, 0)  # and memoised again


def test_program_state_does_not_defeat_the_memo(mod: types.ModuleType) -> None:
    mod.work(1)
    fp = fresh(mod)
    mod.RUNS.extend(range(10))  # bound by `RUNS = []`: its contents never count
    assert calls_after(mod, lambda m: None) == (1, 0)
    assert fresh(mod) == fp


def test_a_file_edited_after_a_memoised_hit_serves_the_code_that_runs(
    mod: types.ModuleType,
) -> None:
    """An edit without a reload changes no code that runs: a plain hit is
    served the entry of that code (what running it gives), without a
    `stat` of its file per call; a run's start reports the edit."""
    assert mod.work(5) == mod.work(5)
    path = Path(mod.__file__ or "")
    path.write_text(MODULE.replace("x + LIMIT", "x + LIMIT + 1"))
    fn = mod.work.__durable_step__.fn
    with pytest.raises(ConfigurationError, match="no longer matches the running code"):
        fingerprint_function(fn)
    assert mod.work(5) == fn(5)  # the running code's value, from its entry
    assert len(mod.RUNS) == 2  # the hit, then fn(5) here
    work = mod.work

    @durable.workflow(name="edited")  # on the store of the plain calls
    def flow(x: int) -> int:
        return int(work(x))

    with pytest.raises(ConfigurationError, match="no longer matches the running code"):
        flow(5)
    assert len(mod.RUNS) == 2
    path.write_text(MODULE.replace("# program state", "# state"))  # comments only
    assert flow(5) == mod.work(5)
    assert len(mod.RUNS) == 2  # the source matches again: the first entry is reused


def test_a_run_start_sees_the_same_changes(mod: types.ModuleType, tmp_path: Path) -> None:
    """The run's definition check uses the memo too."""
    store = durable.open_store(tmp_path / "store")
    work = mod.work

    @durable.workflow(store=store, name="memo_flow")
    def flow(x: int) -> int:
        return int(work(x))

    flow.with_options(run_id="a")(1)
    flow.with_options(run_id="a")(1)
    mod.LIMIT = 7
    with pytest.raises(durable.DefinitionChangedError, match=r"helper memo_mod_\w+\.helper changed"):
        flow.with_options(run_id="a")(1)
    assert len(mod.RUNS) == 1


# ---------------------------------------------------------------- notebook cells


CELLS = [
    "import durable\nRUNS = []\nTABLE = [1, 2]\n",
    textwrap.dedent(
        """\
        @durable.step(cache=True)
        def total(n):
            RUNS.append(n)
            return n + sum(TABLE)
        """
    ),
    "print('RESULT', total(1), total(1), len(RUNS))",
    # A later cell changes TABLE at module level: a statement that binds it.
    "TABLE.append(3)\nprint('RESULT', total(1), total(1), len(RUNS))",
    "unrelated = 1\nprint('RESULT', total(1), len(RUNS))",  # a new cell, no change
]


def test_a_notebook_cell_that_changes_a_global_is_seen_after_a_hit(tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    done = run_cells(tmp_path, CELLS)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines == ["RESULT 4 4 1", "RESULT 7 7 2", "RESULT 7 2"], done.stdout + done.stderr


DISPATCH = """\
import functools
import durable

RUNS = []


@functools.singledispatch
def fmt(x):
    return 1


@fmt.register
def _(x: str):
    return 2


def fmt_int(x: int):
    return 3


@durable.step(cache=True)
def work(x, k=1):
    RUNS.append(x)
    return fmt(x) * k
"""


def _register_implementation(m: types.ModuleType) -> None:
    m.fmt.register(int, m.fmt_int)  # which implementation runs: another one


def _replace_defaults(m: types.ModuleType) -> None:
    m.work.__durable_step__.fn.__defaults__ = (2,)


def _rename(m: types.ModuleType) -> None:
    m.work.__durable_step__.fn.__qualname__ = "renamed"


@pytest.mark.parametrize("change", [_register_implementation, _replace_defaults, _rename])
def test_a_dispatch_default_or_name_change_after_memoised_hits_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Any
) -> None:
    """What a memo check compares as the empty tuple (`dispatched`), the
    function's own attributes (`live_state`): each change is still seen."""
    store = f"memory://memo-{uuid.uuid4().hex}"
    for mod in import_memo_module(tmp_path, monkeypatch, "dispatch_mod", DISPATCH, "d_cfg", store):
        assert mod.work(5) == mod.work(5) == 1
        assert mod.RUNS == [5]
        change(mod)
        mod.work(5)
        mod.work(5)
        assert mod.RUNS == [5, 5]
        assert memo_fingerprint(mod.work.__durable_step__.fn).value == fingerprint_function(
            mod.work.__durable_step__.fn
        ).value


CLASS_MODULE = """\
import durable

RUNS = []


class Model:
    def predict(self, x):
        return x + 1


@durable.step(cache=True)
def infer(x):
    RUNS.append(x)
    return Model().predict(x)
"""


@pytest.fixture
def classy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    store = f"memory://memo-{uuid.uuid4().hex}"
    yield from import_memo_module(tmp_path, monkeypatch, "memo_cls", CLASS_MODULE, "memo_c", store)


def test_a_method_reloaded_in_place_after_a_memoised_hit_runs_the_new_code(
    classy: types.ModuleType,
) -> None:
    """IPython's %autoreload edits the file, then swaps each function's
    `__code__` in place: the class object and its method objects stay the
    same. A plain hit asks no file for its stat, so the running method's
    code must be what the memo checks; it was served the old entry (2 where
    the running code gives 101)."""
    assert classy.infer(1) == classy.infer(1) == 2
    assert len(classy.RUNS) == 1  # the second call was a hit, fingerprint memoised
    edited = CLASS_MODULE.replace("x + 1", "x + 100")
    Path(classy.__file__ or "").write_text(edited)
    reloaded: dict[str, Any] = {"__name__": "memo_cls_reloaded"}
    exec(compile(edited, classy.__file__ or "", "exec"), reloaded)
    classy.Model.predict.__code__ = reloaded["Model"].predict.__code__
    assert classy.Model().predict(1) == 101
    assert classy.infer(1) == 101
    assert len(classy.RUNS) == 2
    assert classy.infer(1) == 101 and len(classy.RUNS) == 2  # memoised again


def test_a_method_reloaded_in_place_in_a_module_used_whole_runs_the_new_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, with the class reached through its module used as a whole
    (`getattr(models, name)`), which counts by its statements' text."""
    models = f"memo_models_{uuid.uuid4().hex[:8]}"
    text = CLASS_MODULE.split("@durable.step")[0]  # RUNS and Model
    (tmp_path / f"{models}.py").write_text(text)
    source = f"import durable\nimport {models}\n\n\n" + textwrap.dedent(
        f"""\
        @durable.step(cache=True)
        def infer(x, name="Model"):
            {models}.RUNS.append(x)
            return getattr({models}, name)().predict(x)
        """
    )
    store = f"memory://memo-{uuid.uuid4().hex}"
    for mod in import_memo_module(tmp_path, monkeypatch, "memo_whole", source, "memo_w", store):
        held = sys.modules[models]
        assert mod.infer(1) == mod.infer(1) == 2
        assert len(held.RUNS) == 1
        edited = text.replace("x + 1", "x + 100")
        Path(held.__file__ or "").write_text(edited)
        reloaded: dict[str, Any] = {"__name__": "memo_models_reloaded"}
        exec(compile(edited, held.__file__ or "", "exec"), reloaded)
        held.Model.predict.__code__ = reloaded["Model"].predict.__code__
        assert mod.infer(1) == 101
        assert len(held.RUNS) == 2
        sys.modules.pop(models, None)


CACHED_PROPERTY_MODULE = """\
import functools

import durable

RUNS = []


class Model:
    @functools.cached_property
    def offset(self):
        return 1


@durable.step(cache=True)
def infer(x):
    RUNS.append(x)
    return x + Model().offset
"""


def test_a_cached_property_reloaded_in_place_runs_the_new_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"memory://memo-{uuid.uuid4().hex}"
    source = CACHED_PROPERTY_MODULE
    for mod in import_memo_module(tmp_path, monkeypatch, "memo_cp", source, "memo_cp_c", store):
        assert mod.infer(1) == mod.infer(1) == 2
        edited = source.replace("return 1", "return 100")
        Path(mod.__file__ or "").write_text(edited)
        reloaded: dict[str, Any] = {"__name__": "memo_cp_reloaded"}
        exec(compile(edited, mod.__file__ or "", "exec"), reloaded)
        mod.Model.offset.func.__code__ = reloaded["Model"].offset.func.__code__
        assert mod.infer(1) == 101
        assert len(mod.RUNS) == 2


PATCHED = """\
import durable

RUNS = []


class Adder:
    def compute(self, x):
        return x + 1


@durable.step(cache=True)
def work(x):
    RUNS.append(x)
    return Adder().compute(x)
"""


def test_a_method_replaced_at_run_time_counts_by_its_own_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class counts by the text of the statements that bind or change it;
    a method assigned later inside a function (a test's monkeypatch, a
    plugin) is in none of them, so the fingerprint stayed and the cache
    served the old method's value (2 where the running code gives 101)."""
    import importlib
    import sys

    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"patched_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(PATCHED)
    mod = importlib.import_module(name)
    try:
        assert mod.work(1) == mod.work(1) == 2
        before = fingerprint_function(mod.work.__durable_step__.fn).value
        monkeypatch.setattr(mod.Adder, "compute", lambda self, x: x + 100)
        assert mod.work(1) == 101  # the running code's value, computed
        assert mod.RUNS == [1, 1]
        assert fingerprint_function(mod.work.__durable_step__.fn).value != before
    finally:
        sys.modules.pop(name, None)


GLOBALS_MODULE = """\
import durable

RUNS = []


def clean_a(x):
    return x + 1


@durable.step(cache=True)
def work(x, kind="a"):
    RUNS.append(x)
    return globals()["clean_" + kind](x)
"""


def test_a_helper_found_through_globals_rebound_after_a_hit_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`globals()[name]` uses the step's module as a whole: a helper rebound
    there (a notebook cell run again) was served the old helper's entry (2
    where running gives 3)."""
    store = f"memory://memo-{uuid.uuid4().hex}"
    for mod in import_memo_module(tmp_path, monkeypatch, "globs_mod", GLOBALS_MODULE, "g_c", store):
        assert mod.work(1) == mod.work(1) == 2
        assert mod.RUNS == [1]
        monkeypatch.setattr(mod, "clean_a", lambda x: x + 2)
        assert mod.work(1) == mod.work(1) == 3
        assert mod.RUNS == [1, 1]
        fresh(mod)  # the memo agrees with a fingerprint computed from scratch


ALIAS_CELLS = [
    "import durable\nCFG = {'k': 1}",
    "MODEL = CFG",  # bound to the dict here...
    "@durable.step\ndef scale(x):\n    return x * CFG['k']\n\n"
    "@durable.workflow\ndef flow(x):\n    return scale(x)",
    "print('RESULT', flow.with_options(run_id='r')(3))",
    "MODEL['k'] = 2",  # ...changed through that name in another cell
    "try:\n    print('RESULT', flow.with_options(run_id='r')(3))\n"
    "except durable.DefinitionChangedError as e:\n    print('RESULT refused', 'CFG' in str(e))",
    "print('RESULT', flow.with_options(run_id='r2')(3))",
]


def test_a_cell_changing_a_global_through_another_name_is_seen(tmp_path: Path) -> None:
    """`MODEL = CFG` in one cell, `MODEL['k'] = 2` in another: the run
    called again was answered 3 from its record where running gives 6."""
    pytest.importorskip("IPython")
    done = run_cells(tmp_path, ALIAS_CELLS)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines == ["RESULT 3", "RESULT refused True", "RESULT 6"], done.stdout + done.stderr


REGISTRY_CELLS = [
    "import durable\nWEIGHTS = {}\n\ndef register(weight):\n"
    "    def decorate(fn):\n        WEIGHTS[fn.__name__] = weight\n        return fn\n"
    "    return decorate",
    "@register(2)\ndef g():\n    pass",
    "@durable.step\ndef scale(x):\n    return x * WEIGHTS['g']\n\n"
    "@durable.workflow\ndef flow(x):\n    return scale(x)",
    "print('RESULT', flow.with_options(run_id='r')(3))",
    "@register(2)\ndef g():\n    pass",  # run again as it was: no change
    "print('RESULT', flow.with_options(run_id='r')(3))",
    "@register(3)\ndef g():\n    pass",  # the cell edited and run again
    "try:\n    print('RESULT', flow.with_options(run_id='r')(3))\n"
    "except durable.DefinitionChangedError as e:\n    print('RESULT refused', 'WEIGHTS' in str(e))",
    "print('RESULT', flow.with_options(run_id='r2')(3))",
]


def test_a_cell_filling_a_global_through_another_cells_function_is_seen(tmp_path: Path) -> None:
    """`@register(2)` in one cell, `register` (filling WEIGHTS) in another:
    after the cell was edited to `@register(3)` and run again, the run
    called again was answered 6 from its record where running gives 9."""
    pytest.importorskip("IPython")
    done = run_cells(tmp_path, REGISTRY_CELLS)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    expected = ["RESULT 6", "RESULT 6", "RESULT refused True", "RESULT 9"]
    assert lines == expected, done.stdout + done.stderr


def test_a_global_a_module_level_statement_changes_between_calls_is_seen(
    tmp_path: Path,
) -> None:
    """`CONFIG["k"] = 7` between two calls in a script: the statement is in
    the file before and after it runs, so counting statements alone gave
    both calls one key, and the second was served the first's output (3
    where running gives 21). Such a global counts by its contents too; run
    again, the script's calls are all hits (the keys are the same in
    another process)."""
    script = tmp_path / "cfg_script.py"
    script.write_text(
        textwrap.dedent(
            """
            import durable
            ran = []
            CONFIG = {"k": 1}

            @durable.step(cache=True)
            def direct(v):
                ran.append(v)
                return v * CONFIG["k"]

            def helper(v):
                return v * CONFIG["k"]

            @durable.step(cache=True)
            def via_helper(v):
                ran.append(v)
                return helper(v)

            out = [direct(3), via_helper(3)]
            CONFIG["k"] = 7
            out += [direct(3), via_helper(3)]
            for k in (2, 3):
                CONFIG["k"] = k
                out.append(direct(3))
            print(out, len(ran))
            """
        )
    )
    runs = [first_line_of(script, tmp_path / "store") for _ in range(2)]
    assert runs == ["[3, 3, 21, 21, 6, 9] 6", "[3, 3, 21, 21, 6, 9] 0"]


def test_an_attribute_a_module_level_statement_sets_between_calls_is_seen(
    tmp_path: Path,
) -> None:
    """`helper.k = 2` or `NS.k = 2` between two calls in a script: the
    object's plain attributes count as a dict's contents do, so the second
    call runs (2 then 3), not served the first's 2 (a dict changed so was
    seen, an attribute was not). Run again, the script's calls are all
    hits."""
    script = tmp_path / "attr_script.py"
    script.write_text(
        textwrap.dedent(
            """
            import types
            import durable
            ran = []

            def helper():
                return 0

            helper.k = 1
            NS = types.SimpleNamespace(k=1, model=object())

            @durable.step(cache=True)
            def by_function(v):
                ran.append(v)
                return v + helper.k

            @durable.step(cache=True)
            def by_namespace(v):
                ran.append(v)
                return v + NS.k

            out = [by_function(1), by_namespace(1)]
            helper.k = 2
            NS.k = 2
            out += [by_function(1), by_namespace(1)]
            print(out, len(ran))
            """
        )
    )
    runs = [first_line_of(script, tmp_path / "store") for _ in range(2)]
    assert runs == ["[2, 2, 3, 3] 4", "[2, 2, 3, 3] 0"]


BY_NAME = """
import sys
import durable
ran = []
K = 1
CFG = {"k": 1}

@durable.step(cache=True)
def by_globals(v):
    ran.append(v)
    return v + globals()["K"]

@durable.step(cache=True)
def by_sys_modules(v):
    ran.append(v)
    return v + getattr(sys.modules[__name__], "CFG")["k"]

out = [by_globals(1), by_sys_modules(1)]
K = 2
CFG["k"] = 2
out += [by_globals(1), by_sys_modules(1)]
"""


def test_a_global_a_step_finds_by_name_changed_between_calls_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`K = 2` or `CFG["k"] = 2` at module level between two calls of a
    step reading its module whole (`globals()["K"]`, `sys.modules[__name__]`):
    the module's statements are all in the file before and after, and the
    second call was served the first's 2 where it computes 3. What the
    module's statements rebind or change counts as it is now."""
    store = str(tmp_path / "store")
    for mod in import_memo_module(tmp_path, monkeypatch, "by_name", BY_NAME, "by_name_c", store):
        assert (mod.out, len(mod.ran)) == ([2, 2, 3, 3], 4)


REBOUND = """
import durable
ran = []

def add_one(x):
    return x + 1

def add_two(x):
    return x + 2

helper = add_one

@durable.step(cache=True)
def by_globals(v):
    ran.append(v)
    return v + len(globals()) * 0

@durable.step(cache=True)
def direct(v):
    ran.append(v)
    return helper(v)

out = [by_globals(1), direct(1)]
helper = add_two
out += [by_globals(1), direct(1)]
"""


def test_a_helper_name_rebound_between_calls_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`helper = add_two` at module level between two calls: both
    statements are in the file and read both functions, so the second call
    of `direct` was served add_one's 2 where it computes 3. Which function
    the name holds now counts."""
    store = str(tmp_path / "store")
    for mod in import_memo_module(tmp_path, monkeypatch, "rebound", REBOUND, "rebound_c", store):
        # by_globals runs again too: its module holds another function under `helper`.
        assert (mod.out, len(mod.ran)) == ([1, 2, 1, 3], 4)


def first_line_of(script: Path, store: Path) -> str:
    """The first line a script prints, run in a new process on `store`."""
    env = {**os.environ, "DURABLE_STORE": str(store)}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split("\n")[0]


def test_a_run_right_after_the_decoration_reuses_its_fingerprint(
    load: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a run's start fingerprinted each step a second time
    (`refingerprint`), nothing it read changed since its decoration. A
    helper rebound after it is counted afresh (one analysis more)."""
    import durable._fingerprint.fingerprint as fp

    analysed: list[str] = []
    real = fp._analyse

    def counting(fn: Any, **kw: Any) -> Any:
        analysed.append(getattr(fn, "__name__", "?"))
        return real(fn, **kw)

    monkeypatch.setattr(fp, "_analyse", counting)
    store = f"memory://once-{uuid.uuid4().hex}"
    mod = load("decorated_once", f"""
        import durable

        def helper(x):
            return x * 3

        @durable.step
        def triple(x):
            return helper(x)

        @durable.workflow(store={store!r})
        def flow(x):
            return triple(x)
        """)  # fmt: skip
    assert mod.flow(2) == 6
    assert analysed.count("triple") == 1  # was 2
    decorated = mod.triple.fingerprint
    mod.helper = lambda x: x * 5
    assert mod.flow(3) == 15
    assert analysed.count("triple") == 2
    assert fresh_step(mod.triple) != decorated


def fresh_step(step: Any) -> str:
    from durable._core.spec import refingerprint

    return refingerprint(step.__durable_step__).value
