"""What a fingerprint covers beyond the function's own text: constants,
defaults, closures, helpers (and what it must not follow), partials,
lambdas, functions without source, notebook cells, pickling, reload."""

from __future__ import annotations

import functools
import importlib
import json
import linecache
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint.fingerprint import (
    Fingerprint,
    combine,
    describe_change,
    fingerprint_function,
    referenced_objects,
)
from durable.errors import ConfigurationError

REPO = Path(__file__).resolve().parents[1]


def fp(fn: Any, **kw: Any) -> Fingerprint:
    return fingerprint_function(fn, **kw)


# ---------------------------------------------------------------- constants


def test_plain_constants_count_by_value_and_other_globals_by_their_binding(load: Any) -> None:
    m = load(
        "consts",
        """
        import threading
        PROMPT = "hi"
        TABLE = {"a": (1, 2.5, None), "b": [b"x", frozenset({1, 2})], "c": {True}}
        LOCK = threading.Lock()
        SELF = []
        SELF.append(SELF)

        def target(x):
            with LOCK:
                return PROMPT, TABLE, SELF, len(x)
        """,
    )
    parts = fp(m.target).parts
    # `LOCK = threading.Lock()` also counts by what its statement reads.
    assert set(parts) == {
        "code", "const:PROMPT", "global:TABLE", "global:LOCK", "global:SELF",
        "global:consts.threading",
    }  # fmt: skip
    before = dict(parts)
    m.TABLE["a"] = "changed by the program"  # state: the statement that bound it is the same
    m.LOCK = threading.Lock()
    assert fp(m.target).parts == before
    m.PROMPT = "rebound"
    assert describe_change(before, fp(m.target).parts) == "constant PROMPT changed"


def test_a_proxy_whose_attributes_raise_is_not_followed(load: Any) -> None:
    """werkzeug's `LocalProxy` outside a request, Django's unconfigured
    settings: any attribute read raises. Held in a list a step reads, it
    made the decorator (and every later fingerprint) raise that error."""
    source = """
        class Proxy:
            def __getattr__(self, name):
                raise RuntimeError("working outside of application context")

            def __call__(self):
                return 1

        HOOKS = [Proxy()]

        def target(x):
            return [h() for h in HOOKS], x
        """
    m = load("proxies", source)
    before = fp(m.target)
    assert "global:HOOKS" in before.parts and fp(m.target) == before
    m = load("proxies", source.replace("HOOKS = [Proxy()]", "HOOKS = [Proxy(), Proxy()]"))
    assert describe_change(before.parts, fp(m.target).parts) == "global HOOKS changed"


def test_a_local_that_shadows_a_global_is_not_read(load: Any) -> None:
    m = load(
        "shadow",
        """
        data = "global"

        def target():
            data = "local"
            return data
        """,
    )
    assert "const:data" not in fp(m.target).parts


def test_constant_read_in_a_nested_function_or_comprehension_counts(load: Any) -> None:
    m = load(
        "nested_reads",
        """
        A = 1
        B = 2

        def target(xs):
            def inner():
                return A
            return [x + B for x in xs], inner
        """,
    )
    assert {"const:A", "const:B"} <= set(fp(m.target).parts)


def test_program_state_is_not_a_constant(load: Any) -> None:
    """Mutable state must not make a run look changed: lists and dicts
    (however they are spelled), names some function declares `global`,
    mutable closure cells."""
    m = load(
        "state",
        """
        MODELS = {"fast": "small"}
        seen = []
        counter = 0

        def bump():
            global counter
            counter += 1

        def make():
            flags = {"on": True}
            def target(x):
                seen.append(x)
                return MODELS[x], counter, flags["on"]
            return target, flags

        target, flags = make()
        """,
    )
    first = fp(m.target)
    assert set(first.parts) == {
        "code",
        "global:MODELS",
        "global:seen",
        "global:counter",
        "closure",
        # `make` changes `seen` in place (its `target` appends to it), so its
        # statement binds `seen` too, and what that statement reads counts.
        # (`make`'s own `flags` and `target` are its locals: not the module's.)
        "helper:state.make",
        # never hashed: a digest of each of `make`'s parts, for a refusal's words
        "said:helper:state.make",
        "global:state.MODELS",
        "global:state.counter",
        # `target` holds a dict (counted by type): the statement that made
        # it counts, in its own parts.
        "made",
    }
    m.seen.append(1)
    m.bump()
    m.flags["on"] = False
    m.MODELS["fast"] = "large"  # changed by the program, not in the source
    assert fp(m.target) == first


def test_a_global_without_a_readable_binding_counts_by_the_fallback(load: Any) -> None:
    """Bound by `globals()[...]`: no statement to read, so a list of plain
    data counts by value, a module by its name, an object by its type."""
    m = load(
        "unbound",
        """
        import json, pickle
        for name, value in {"TABLE": [1, 2], "ser": json, "lock": object()}.items():
            globals()[name] = value

        def target(x):
            return TABLE, ser.dumps(x), lock
        """,
    )
    first = fp(m.target)
    assert {"global:TABLE", "global:ser", "global:lock"} <= set(first.parts)
    m.lock = object()  # another object of the same type
    assert fp(m.target) == first
    m.TABLE.append(3)
    assert describe_change(first.parts, fp(m.target).parts) == "global TABLE changed"
    m.TABLE.pop()
    m.ser = m.pickle
    assert describe_change(first.parts, fp(m.target).parts) == "global ser changed"


# ---------------------------------------------------------------- helpers


HELPER_SRC = """
import json, os.path, textwrap
import cloudpickle

def leaf(x):
    return x + 1

def ping(n):
    return pong(n - 1) if n else leaf(n)

def pong(n):
    return ping(n)

@functools.lru_cache
def cached(x):
    return x

def target(x):
    json.dumps(x); os.path.join("a"); textwrap.dedent("x"); cloudpickle.dumps(x)
    return ping(x) + cached(x)
"""


def test_helpers_are_followed_transitively_and_cycles_end(load: Any) -> None:
    m = load("helpers", "import functools\n" + HELPER_SRC)
    helpers = {k for k in fp(m.target).parts if k.startswith("helper:")}
    assert helpers == {
        "helper:helpers.ping",
        "helper:helpers.pong",
        "helper:helpers.leaf",
        "helper:helpers.cached",
    }


def test_stdlib_and_installed_packages_are_not_followed(load: Any) -> None:
    """Only the statements that import them count, not their code."""
    m = load("helpers2", "import functools\n" + HELPER_SRC)
    keys = set(fp(m.target).parts)
    assert {"global:json", "global:os", "global:textwrap", "global:cloudpickle"} <= keys
    for name in ("dumps", "join", "dedent", "os.path"):
        assert not any(name in k for k in keys)


def test_names_bound_later_are_reported_unresolved(load: Any) -> None:
    """At decoration time a helper or constant defined further down does not
    exist yet: the fingerprint says so, and a later computation sees it."""
    m = load(
        "below",
        """
        from durable._fingerprint.fingerprint import fingerprint_function

        def stamp(fn):
            fn.early = fingerprint_function(fn)
            return fn

        @stamp
        def target(x):
            return later(x) + len(LATER_TEXT) + len(str(x))

        def later(x):
            return x

        LATER_TEXT = "t"
        """,
    )
    assert m.target.early.unresolved == {"later", "LATER_TEXT"}  # not `len`, `str`
    now = fp(m.target)
    assert now.unresolved == frozenset()
    assert {"helper:below.later", "const:LATER_TEXT"} <= set(now.parts)


def test_recursion_by_name_is_stable_across_reloads(load: Any, tmp_path: Path) -> None:
    """While the decorator runs, a recursive step's own name is unbound on
    the first import and bound to the previous object on a reload (or a
    notebook cell run again): neither may change the fingerprint."""
    src = """
    from durable._fingerprint.fingerprint import fingerprint_function

    class Step:
        def __init__(self, fn):
            self.__wrapped__ = fn
            self.__durable_fingerprint__ = fingerprint_function(fn).value
            self.unresolved = fingerprint_function(fn).unresolved
        def __call__(self, *a):
            return self.__wrapped__(*a)

    @Step
    def fact(n):
        return 1 if n < 2 else n * fact(n - 1)
    """
    m = load("recursive", src)
    first = m.fact.__durable_fingerprint__
    assert m.fact.unresolved == frozenset()
    m = importlib.reload(m)
    assert m.fact.__durable_fingerprint__ == first
    assert m.fact(5) == 120


def test_enum_members_count_as_constants(load: Any) -> None:
    m = load(
        "enums",
        """
        import enum

        class Mode(enum.Enum):
            FAST = 1
            SLOW = 2

        MODE = Mode.FAST

        def target(x, mode=Mode.SLOW):
            return MODE, mode
        """,
    )
    first = fp(m.target)
    assert "const:MODE" in first.parts
    m.MODE = m.Mode.SLOW
    assert describe_change(first.parts, fp(m.target).parts) == "constant MODE changed"


def test_deep_false_leaves_helpers_out(load: Any) -> None:
    m = load("helpers3", "import functools\n" + HELPER_SRC)
    assert not any(k.startswith("helper:") for k in fp(m.target, deep=False).parts)
    assert any(k.startswith("helper:") for k in fp(m.target).parts)


def test_helpers_in_another_user_module(load: Any) -> None:
    load("util_mod", "RATE = 0.5\n\ndef scale(x):\n    return x * RATE\n")
    m = load(
        "uses_util",
        """
        import util_mod
        from util_mod import scale as s

        def target(x):
            return util_mod.scale(x) + s(x)
        """,
    )
    parts = fp(m.target).parts
    assert "helper:util_mod.scale" in parts
    before = parts["helper:util_mod.scale"]
    sys.modules["util_mod"].RATE = 0.6  # the helper's constant is part of the helper
    assert fp(m.target).parts["helper:util_mod.scale"] != before


def test_steps_contribute_only_their_fingerprint(load: Any) -> None:
    m = load(
        "with_step",
        """
        def secret_helper(x):
            return x

        class Step:
            def __init__(self, fn, stamp):
                self.fn, self.__durable_fingerprint__ = fn, stamp
            def __call__(self, x):
                return self.fn(x)

        fetch = Step(secret_helper, "aaaaaaaaaaaa")

        def target(x):
            return fetch(x)
        """,
    )
    first = fp(m.target)
    assert first.parts["step:with_step.Step"] == "aaaaaaaaaaaa"
    assert not any("secret_helper" in k for k in first.parts)  # not walked
    m.fetch.__durable_fingerprint__ = "bbbbbbbbbbbb"
    second = fp(m.target)
    assert second.value != first.value
    assert describe_change(first.parts, second.parts) == "step with_step.Step changed"


def test_steps_false_leaves_steps_to_the_caller(load: Any) -> None:
    """A workflow's definition combines its steps itself: its own part must
    not change when only a step did (or the body is reported as changed)."""
    m = load(
        "wf_body",
        """
        class Step:
            __durable_fingerprint__ = "aaaaaaaaaaaa"

        fetch = Step()

        def helper(x):
            return x

        def body(x):
            return fetch(helper(x))
        """,
    )
    own = fp(m.body, steps=False)
    assert set(own.parts) == {"code", "helper:wf_body.helper"}
    m.Step.__durable_fingerprint__ = "bbbbbbbbbbbb"
    assert fp(m.body, steps=False) == own
    assert fp(m.body).value != own.value


def test_user_decorators_are_helpers(load: Any) -> None:
    m = load(
        "decos",
        """
        import functools

        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*a):
                return fn(*a)
            return wrapper

        @logged
        def target(x):
            return x
        """,
    )
    assert "helper:decos.logged" in fp(m.target).parts


# ---------------------------------------------------------------- defaults, closures, partial


def test_factory_closures_with_different_values_differ(load: Any) -> None:
    m = load(
        "factory",
        """
        def make(k, fn=None):
            def step(x):
                return x * k
            return step

        two, three, two_again = make(2), make(3), make(2)
        """,
    )
    assert fp(m.two).value != fp(m.three).value
    assert fp(m.two) == fp(m.two_again)
    assert describe_change(fp(m.two).parts, fp(m.three).parts) == "closure values changed"


def test_closure_holding_a_user_function_follows_it(load: Any) -> None:
    m = load(
        "closure_fn",
        """
        def helper(x):
            return x

        def make(fn):
            def step(x):
                return fn(x)
            return step

        target = make(helper)
        """,
    )
    assert "helper:closure_fn.helper" in fp(m.target).parts


def test_partial_includes_bound_arguments(load: Any) -> None:
    m = load("part", "def target(a, b=1, *, c=2):\n    return a + b + c\n")
    p1 = functools.partial(m.target, 1, c=3)
    assert fp(p1) == fp(functools.partial(m.target, 1, c=3))
    assert fp(p1).value != fp(functools.partial(m.target, 2, c=3)).value
    assert fp(p1).value != fp(m.target).value
    assert fp(p1).identity == "part.target(1, c=3)"
    assert (
        describe_change(fp(m.target).parts, fp(p1).parts)
        == "bound arguments (functools.partial) added"
    )
    keywords = functools.partial(m.target, 1, b=2, c=3)
    assert fp(keywords) == fp(functools.partial(m.target, 1, c=3, b=2))  # order of keywords


def test_unplain_defaults_count_by_type_not_identity(load: Any) -> None:
    src = "class Client:\n    pass\n\ndef target(c=Client()):\n    return c\n"
    first = fp(load("defaults_obj", src).target)
    second = fp(load("defaults_obj", src).target)  # a new Client object
    assert first == second


# ---------------------------------------------------------------- lambdas


def test_two_lambdas_on_one_line_ask_for_a_name(load: Any) -> None:
    m = load("lambdas", "a, b = (lambda x: x + 1), (lambda x: x + 2)\nsolo = lambda x: x * 2\n")
    with pytest.raises(ConfigurationError, match="name="):
        fp(m.a)
    assert fp(m.a, name="a").value != fp(m.b, name="b").value
    assert fp(m.solo).identity == "lambdas.<lambda>"


def test_nested_lambda_is_one_definition(load: Any) -> None:
    m = load("curried", "add = lambda x: lambda y: x + y\n")
    assert fp(m.add).parts["code"]


# ---------------------------------------------------------------- no source


def test_exec_function_needs_version() -> None:
    ns: dict[str, Any] = {"__name__": "generated"}
    exec("def f(x):\n    return x\n", ns)
    with pytest.raises(ConfigurationError, match="version="):
        fp(ns["f"])
    pinned = fp(ns["f"], version="1")
    assert pinned.parts == {"version": "1"} and pinned.identity == "generated.f"
    assert fp(ns["f"], version="2").value != pinned.value


def test_helper_without_source_is_an_error_not_a_guess(load: Any) -> None:
    m = load("calls_exec", "def target(x):\n    return made(x)\n")
    exec("def made(x):\n    return x\n", m.__dict__)
    with pytest.raises(ConfigurationError, match="deep=False"):
        fp(m.target)
    assert set(fp(m.target, deep=False).parts) == {"code"}


# Line 1 of the program and of the exec'd text define `f(x)`: same name, line
# and parameters, different code. Python 3.13 keeps the program's text in
# linecache as "<string>", the file name of exec'd code too.
DASH_C = """def f(x):
    return x
from durable._fingerprint.fingerprint import fingerprint_function
ns = {"__name__": "__main__"}
exec("def f(x):\\n    return x + 1\\n", ns)
for fn in (f, ns["f"]):
    try:
        print("fingerprinted", fingerprint_function(fn).value)
    except ValueError as e:
        print("refused:", e)
print(fingerprint_function(f, version="7").value)
"""


def test_python_dash_c_needs_version_on_every_python(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", DASH_C],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    typed, made, pinned = done.stdout.strip().splitlines()
    for refused in (typed, made):
        assert refused.startswith("refused: cannot read the source") and "version=" in refused
    assert len(pinned) == 12


@pytest.mark.parametrize("name", ["<string>", "<stdin>", "<console>"])
def test_text_kept_under_a_shared_file_name_is_never_taken_for_a_source(name: str) -> None:
    # What 3.13 does for `python -c`, on any Python: the program's text is in
    # linecache under the name that every exec'd string gets.
    program = "def f(x):\n    return x\n"
    saved = linecache.cache.get(name)
    linecache.cache[name] = (len(program), None, program.splitlines(True), name)
    try:
        ns: dict[str, Any] = {"__name__": "__main__"}
        exec(compile("def f(x):\n    return x + 1\n", name, "exec"), ns)
        with pytest.raises(ConfigurationError, match="cannot read the source"):
            fp(ns["f"])
        # The same text under a name of its own (a notebook cell) is a source.
        assert fp(cell_function(program.replace("f(", "step("), "<cell-1>")).parts["code"]
    finally:
        linecache.cache.pop("<cell-1>", None)
        if saved is None:
            linecache.cache.pop(name, None)
        else:
            linecache.cache[name] = saved


def test_source_edited_after_import_is_detected(load: Any, tmp_path: Path) -> None:
    m = load("stale", "def target(x):\n    return x\n")
    (tmp_path / "stale.py").write_text("def target(x, y):\n    return x\n")
    with pytest.raises(ConfigurationError, match="no longer matches"):
        fp(m.target)


# ---------------------------------------------------------------- notebooks


def cell_function(source: str, filename: str) -> Any:
    """What IPython does with a cell: source registered in linecache under a
    per-kernel file name, code compiled with that name, `__main__` module."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), ns)
    return ns["step"]


def test_notebook_cell_file_name_does_not_count() -> None:
    cell = "import math\n\n\ndef step(x):\n    return math.sqrt(x) + 1\n"
    a = cell_function(cell, "/tmp/ipykernel_111/1234567.py")
    b = cell_function("# moved to another cell\n" + cell, "/tmp/ipykernel_222/7654321.py")
    try:
        assert fp(a) == fp(b)
        assert fp(a).identity == "__main__.step"
        c = cell_function(cell.replace("+ 1", "+ 2"), "/tmp/ipykernel_333/1.py")
        assert fp(c).value != fp(a).value
    finally:
        for name in (
            "/tmp/ipykernel_111/1234567.py",
            "/tmp/ipykernel_222/7654321.py",
            "/tmp/ipykernel_333/1.py",
        ):
            linecache.cache.pop(name, None)


# ---------------------------------------------------------------- travel and reload

PICKLE_SRC = """
PROMPT = "p"

def helper(x):
    return x + PROMPT

def stamp(fn):
    from durable._fingerprint.fingerprint import fingerprint_function
    fn.__durable_fingerprint__ = fingerprint_function(fn).value
    return fn

@stamp
def target(x):
    return helper(x)
"""


def test_fingerprint_travels_with_a_pickled_function(load: Any, tmp_path: Path) -> None:
    cloudpickle = pytest.importorskip("cloudpickle")
    m = load("travels", PICKLE_SRC)
    cloudpickle.register_pickle_by_value(m)
    try:
        blob = cloudpickle.dumps(m.target)
    finally:
        cloudpickle.unregister_pickle_by_value(m)
    (tmp_path / "travels.py").unlink()  # the worker has no source at all
    (tmp_path / "job.pkl").write_bytes(blob)
    worker = tmp_path / "worker"
    worker.mkdir()
    code = textwrap.dedent(
        """
        import json, pickle, sys
        from durable._fingerprint.fingerprint import fingerprint_function
        fn = pickle.loads(open(sys.argv[1], "rb").read())
        try:
            fingerprint_function(fn)
            recomputable = True
        except ValueError:
            recomputable = False
        print(json.dumps([fn.__durable_fingerprint__, recomputable, fn("x")]))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "job.pkl")],
        cwd=worker,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stamp, recomputable, result = json.loads(done.stdout)
    assert stamp == m.target.__durable_fingerprint__
    assert recomputable is False  # so it did travel, it was not recomputed
    assert result == "xp"


def test_reload_recomputes(load: Any, tmp_path: Path) -> None:
    m = load("reloaded", PICKLE_SRC)
    first = m.target.__durable_fingerprint__
    (tmp_path / "reloaded.py").write_text(
        textwrap.dedent(PICKLE_SRC).replace("x + PROMPT", "PROMPT + x")
    )
    m = importlib.reload(m)
    second = m.target.__durable_fingerprint__
    assert second != first
    (tmp_path / "reloaded.py").write_text(
        "# a comment\n" + textwrap.dedent(PICKLE_SRC).replace("x + PROMPT", "(PROMPT + x)")
    )
    m = importlib.reload(m)
    assert m.target.__durable_fingerprint__ == second


# ---------------------------------------------------------------- for the engine


def test_combine_is_order_free_and_sees_every_child() -> None:
    base = combine("wf", "own", {"a": "1", "b": "2"})
    assert base == combine("wf", "own", {"b": "2", "a": "1"})
    assert base != combine("wf", "own", {"a": "1", "b": "3"})
    assert base != combine("wf", "own", {"a": "1"})
    assert base != combine("wf", "own2", {"a": "1", "b": "2"})
    assert len(base) == 12 and int(base, 16) >= 0


def test_referenced_objects_finds_steps_everywhere(load: Any) -> None:
    load("tasks", "def fetch(x):\n    return x\n")
    m = load(
        "wf_refs",
        """
        import tasks

        def publish(x):
            return x

        def make(step):
            def body(x):
                def nested():
                    return publish(x)
                return tasks.fetch(step(x)), nested()
            return body

        def local_step(x):
            return x

        wf = make(local_step)
        """,
    )
    found = referenced_objects(m.wf)
    for obj in (m.publish, m.local_step, sys.modules["tasks"].fetch):
        assert any(o is obj for o in found)
    partial_found = referenced_objects(functools.partial(m.wf, m.publish))
    assert any(o is m.publish for o in partial_found)


def test_referenced_objects_follows_helpers_but_not_steps(load: Any) -> None:
    m = load(
        "via_helper",
        """
        class Workflow:
            @property
            def __durable_fingerprint__(self):
                raise AssertionError("must not be evaluated")
            def __call__(self):
                return inner_only()

        def inner_only():
            return 1

        def deep_step(x):
            return x

        def helper(x):
            return deep_step(x)

        other = Workflow()

        def body(x):
            return helper(x), other()
        """,
    )
    found = referenced_objects(m.body)
    assert any(o is m.deep_step for o in found)  # through the helper
    assert any(o is m.other for o in found)
    assert not any(o is m.inner_only for o in found)  # a workflow is not entered
    assert not any(o is m.deep_step for o in referenced_objects(m.body, deep=False))
    assert "step:via_helper.Workflow" not in fp(m.body, steps=False).parts


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ({"code": "1"}, {"code": "2"}, "code changed"),
        ({"code": "1", "const:P": "1"}, {"code": "1", "const:P": "2"}, "constant P changed"),
        ({"code": "1"}, {"code": "1", "const:P": "2"}, "now uses constant P"),
        ({"code": "1", "helper:m.h": "1"}, {"code": "1"}, "no longer uses helper m.h"),
        (
            {"code": "1", "helper:m.h": "1"},
            {"code": "2", "helper:m.h": "2"},
            "code changed; helper m.h changed",
        ),
        ({"version": "1"}, {"version": "2"}, "version changed ('1' -> '2')"),
        ({"code": "1"}, {"version": "2"}, "now pinned with version='2'"),
        ({"version": "1"}, {"code": "1"}, "version='1' removed: the source is fingerprinted now"),
        ({"code": "1", "closure": "1"}, {"code": "1", "closure": "2"}, "closure values changed"),
        ({"code": "1"}, {"code": "1"}, "no change"),
    ],
)
def test_describe_change(old: dict[str, str], new: dict[str, str], said: str) -> None:
    assert describe_change(old, new) == said


def test_a_binding_statement_counts_what_it_reads_but_not_the_modules_own_dunders(
    load: Any,
) -> None:
    m = load(
        "derived",
        """
        import os
        BASE = [1, 2]
        ALL = BASE + [3]
        PATHS = [os.path.dirname(__file__), __name__]

        def target(x):
            return ALL, PATHS, x
        """,
    )
    parts = fp(m.target).parts
    assert "global:derived.BASE" in parts  # ALL's statement reads it
    assert not [k for k in parts if "__" in k]  # where the file lies is no part of it


def test_a_namespace_package_of_the_users_is_followed(
    load: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nsp").mkdir()  # no __init__.py: a namespace package
    (tmp_path / "nsp" / "helpers.py").write_text("def clean(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("nsp", "nsp.helpers"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    importlib.import_module("nsp.helpers")  # imported before, as by the workflow's module
    m = load(
        "uses_nsp",
        """
        def target(x):
            from nsp import helpers
            return helpers.clean(x)
        """,
    )
    assert "helper:nsp.helpers.clean" in fp(m.target).parts
