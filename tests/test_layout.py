"""The import rules import-linter cannot check (pyproject's
[tool.importlinter] holds the others): no underscore name crosses a package
boundary, imports inside functions are for optional extras only, and run
management (`durable runs`, `durable show`) never loads the engine."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable

PACKAGE = Path(durable.__file__).parent
# Optional extras (and pytest's assertion rewriter, present only under
# pytest): imported where used so that durable never needs them.
LAZY_OK = {"distributed", "s3fs", "opentelemetry", "_pytest"}
# The other imports inside functions: what a sync run of plain values on a
# local store never needs, loaded where first used so that `import durable`
# and such a run stay light (tests/test_import_time.py). (importing module or
# package, imported module or package): why there.
LAZY_ON_USE = {
    ("durable._storage.codec", "durable._storage.codec_pickle"): "cloudpickle: non-plain values",
    ("durable._storage.codec", "durable._storage.picklescan"): "cloudpickle: an unkept output looked for in a value",
    ("durable._storage.crc", "isal"): "ISA-L's CRC32: the first large body summed",
    ("durable._storage.factory", "durable._storage.objects"): "fsspec: URL stores only",
    ("durable._storage.files", "durable._storage.objects"): "fsspec: URL artifacts only",
    # In async code only, where the running event loop has imported it already.
    ("durable._storage.clock", "asyncio"): "Clock.asleep",
    ("durable._core.plan", "asyncio"): "apause",
    ("durable._core.taskfactory", "asyncio"): "the task factory, called by a loop",
    ("durable._fanout.schedule", "asyncio"): "async_block",
    ("durable._fanout.progress", "tqdm"): "the first bar drawn (often none: not a terminal)",
    # Workflow methods and options that read or change runs (runs(), history(),
    # fork(), cancel(), recover(), keep_last=, progress_file=).
    ("durable._api", "durable._manage"): "run management, when a method asks for it",
    # What a run's process does without unless its steps or store need it
    # (tests/test_import_time.py UNNEEDED: a tenth of the CPU of such a process).
    ("durable._api.step", "durable._core.cacheplain"): "a cached step called outside a run",
    ("durable._core.steps", "durable._core.cacheplain"): "a cached step called outside a run",
    ("durable._core.steps", "durable._core.cache"): "a cached step in a run",
    ("durable._core.steps", "durable._core.artifacts"): "a step that made or lists artifacts",
    ("durable._core.livecall", "durable._core.cache"): "a cached step in a run",
    ("durable._core.livecall", "durable._core.artifacts"): "a step that made or lists artifacts",
    ("durable._fingerprint.entrypoints", "importlib.metadata"): "a step that loads plugins by entry point",
    ("durable._core.outcome", "durable._storage.files"): "a completed run with artifacts called again",
    ("durable._api.workflow", "durable._api.child"): "a workflow called in another's run",
    ("durable._api.ops", "durable._fanout"): "loop_over: a body that sleeps or suspends has no block",
    ("durable._cli.run", "asyncio"): "`durable run` of an async workflow",
    ("durable._cli.recover", "asyncio"): "`durable recover` of an async workflow",
    ("durable._manage.missing", "difflib"): "a run or workflow not found",
    ("durable._errortext", "difflib"): "a mistyped option or command",
    ("durable._calls", "sysconfig"): "the paths of the libraries, when an error is shown",
    ("durable._errortext", "shutil"): "the words a printed command starts with",
    ("durable._manage.fork", "uuid"): "a fork's run id",
    ("durable._core.cachewhy", "concurrent.futures"): "a cached step whose items go to other processes",
    ("durable._storage.base", "durable._storage.recordlog"): "an object store's record log",
    ("durable._storage.base", "durable._storage.segmenter"): "an object store's held run",
    ("durable._storage.base", "durable._storage.removal"): "a run removed",
    ("durable._storage.base", "durable._storage.objectlease"): "an object store's lease looked at",
    ("durable._storage.base", "durable._storage.triesgate"): "a run taken from a holder that died or stalled here",
    ("durable._storage.factory", "durable._storage.keystore"): "a key store of the user's own",
    ("durable._storage.cacheblob", "mmap"): "a large cached value read",
    ("durable._storage.pidspace", "socket"): "the host name, once the program loaded socket",
    ("durable._errortext", "shlex"): "a command a message advises",
    ("durable._fingerprint.packagefiles", "zipfile"): "a package of the user's imported from a zip archive",
    ("durable._errortext", "re"): "a suspend()'s reason, for the parameters it names",
    ("durable._storage.raised", "cloudpickle"): "an error's parts kept with it: loaded with codec_pickle, its caller",
    ("durable._core.reduced", "pickle"): "a value without __module__: its name looked up as pickle does",
    ("durable._fingerprint.fingerprint", "durable._fingerprint.stepgraph"): "built on this module: the first step fingerprinted",
    ("durable._cli.common", "textwrap"): "--help, as argparse itself imports it",
    ("durable._settings", "difflib"): "a DURABLE_ variable durable does not read",
    ("durable.errors", "signal"): "a graceful stop's signal",
}
ENGINE = ("durable._api", "durable._core", "durable._fanout", "durable._fingerprint")


def modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, ast.parse(path.read_text(encoding="utf-8"), str(path))


def room(module: str) -> str:
    """The package a module lives in: `durable._core` for `durable._core.replay`,
    the module itself for `durable.errors`, `durable` for the root."""
    parts = module.split(".")
    return ".".join(parts[:2])


def target(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def crossings(module: str, tree: ast.Module, is_package: bool) -> Iterator[str]:
    """Underscore names this module takes from another package, by import
    or as an attribute of a module imported from there."""
    foreign_modules: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = target(module, node, is_package)
        if not source.startswith("durable") or room(source) == room(module):
            continue
        for alias in node.names:
            full = f"{source}.{alias.name}"
            path = PACKAGE.parent / full.replace(".", "/")
            if path.with_suffix(".py").exists() or path.is_dir():
                foreign_modules.add(alias.asname or alias.name)  # a module of that package
            elif alias.name.startswith("_"):
                yield f"{module} imports {alias.name} from {source}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in foreign_modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            yield f"{module} uses {node.value.id}.{node.attr}"


def test_no_underscore_name_crosses_a_package_boundary() -> None:
    found = []
    for name, tree in modules():
        is_package = (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists()
        found += list(crossings(name, tree, is_package))
    assert found == []


def test_the_checker_sees_a_crossing() -> None:
    tree = ast.parse("from .._core.replay import _hidden\nfrom .._storage import codec\ncodec._x")
    assert list(crossings("durable._api.ops", tree, False)) == [
        "durable._api.ops imports _hidden from durable._core.replay",
        "durable._api.ops uses codec._x",
    ]
    same_room = ast.parse("from .replay import _hidden")
    assert list(crossings("durable._core.steps", same_room, False)) == []


def lazy_imports(module: str, tree: ast.Module, is_package: bool) -> Iterator[tuple[int, str]]:
    """Imports inside functions, by absolute module name."""
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                yield from ((node.lineno, a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                source = target(module, node, is_package)
                for alias in node.names:  # `from . import codec_pickle` imports a module
                    full = f"{source}.{alias.name}"
                    path = PACKAGE.parent / full.replace(".", "/")
                    is_module = path.with_suffix(".py").exists() or path.is_dir()
                    yield node.lineno, full if is_module else source


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def allowed_lazy(module: str, what: str) -> bool:
    if what.split(".")[0] in LAZY_OK:
        return True
    return any(within(module, where) and within(what, of) for where, of in LAZY_ON_USE)


def test_imports_inside_functions_are_optional_extras_only() -> None:
    found = []
    for name, tree in modules():
        is_package = (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists()
        found += [
            f"{name}:{line} imports {what}"
            for line, what in lazy_imports(name, tree, is_package)
            if not allowed_lazy(name, what)
        ]
    assert found == []


def test_the_lazy_import_checker_sees_an_unlisted_import() -> None:
    tree = ast.parse(
        "def f():\n    from . import codec_pickle\n    from .objects import x\n"
        "    import asyncio\n"
    )
    found = list(lazy_imports("durable._storage.codec", tree, False))
    assert found == [
        (2, "durable._storage.codec_pickle"),
        (3, "durable._storage.objects"),
        (4, "asyncio"),
    ]
    allowed = [allowed_lazy("durable._storage.codec", what) for _, what in found]
    assert allowed == [True, False, False]
    assert allowed_lazy("durable._api.steer", "durable._manage.runs")
    assert not allowed_lazy("durable._core.run", "durable._manage.runs")


def test_the_errors_module_imports_nothing_of_durable() -> None:
    """Only its leaves `_errortext`, `_damagetext` and `_valuetext`, which import nothing of durable."""
    tree = ast.parse((PACKAGE / "errors.py").read_text(encoding="utf-8"))
    relative = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert set(relative) == {"_damagetext", "_errortext", "_valuetext"}
    leaves = [ast.parse((PACKAGE / f"{m}.py").read_text(encoding="utf-8")) for m in sorted(relative)]
    imports = [n for leaf in leaves for n in ast.walk(leaf) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not [n for n in imports if isinstance(n, ast.ImportFrom) and n.level]
    names = [a.name for n in imports if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in imports if isinstance(n, ast.ImportFrom)]
    assert not [m for m in names if m.split(".")[0] == "durable"]


RUNS_AND_SHOW = """
import contextlib, io, json, sys
from durable._cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    codes = [main(["--store", sys.argv[1], "runs", "--json"]),
             main(["--store", sys.argv[1], "show", "r1", "--json"])]
loaded = sorted(m for m in sys.modules if m.startswith("durable"))
print(json.dumps({"codes": codes, "out": out.getvalue(), "loaded": loaded}))
"""


def test_runs_and_show_never_load_the_engine(tmp_path: Path) -> None:
    calls: list[int] = []

    @durable.step
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    @durable.workflow(store=str(tmp_path / "store"), run_id="r1")
    def flow(x: int) -> int:
        return double(x) + 1

    assert flow(4) == 9 and calls == [4]
    done = subprocess.run(
        [sys.executable, "-c", RUNS_AND_SHOW, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(PACKAGE.parent), "PATH": ""},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["codes"] == [0, 0]
    assert '"runId": "r1"' in report["out"] and "double" in report["out"]
    assert "durable._manage.runs" in report["loaded"]  # the path was really taken
    assert [m for m in report["loaded"] if m.startswith(ENGINE)] == []
    assert calls == [4]  # looking at the run executed nothing


@pytest.mark.parametrize("name", sorted(durable.__all__))
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(durable, name) is not None


def test_every_dataclass_says_what_it_is_for() -> None:
    """A dataclass without a docstring gets `Name(field: type, ...)` as one,
    made by `inspect.signature` as its module is imported: ~0.4 ms a class,
    in every process that loads the engine (the tests start ~1,400)."""
    found = []
    for name, _ in modules():
        if name != "durable.__main__":  # it would run the command line
            for key, value in vars(importlib.import_module(name)).items():
                own = isinstance(value, type) and value.__module__ == name
                if own and dataclasses.is_dataclass(value) and f"{value.__doc__}".startswith(key + "("):
                    found.append(f"{name}.{key}")
    assert found == []


def test_every_module_says_what_it_is_for_and_stays_small() -> None:
    undocumented = [name for name, tree in modules() if not ast.get_docstring(tree)]
    assert undocumented == []
    long = [
        f"{path.relative_to(PACKAGE)}: {n} lines"
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 330
    ]
    assert long == []


def test_the_shards_of_the_other_pythons_cover_the_fast_suite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each fast test runs on one Python, the fingerprint tests on all
    (scripts/test-pythons): the shards together leave no module out, the
    default Python's (the first, which runs the slow tests) takes none, and
    no other shard takes twice the bytes of another."""
    from .conftest import _ON_EVERY_PYTHON, _in_another_shard, _shards

    modules = sorted(Path(__file__).parent.rglob("test_*.py"))
    kept = []
    for k in (1, 2, 3):
        monkeypatch.setenv("DURABLE_TEST_SHARD", f"{k}/3")
        kept.append({p for p in modules if not _in_another_shard(p)})
    every = {p for p in modules if _ON_EVERY_PYTHON.search(p.name)}
    assert every and all(every <= shard for shard in kept)
    dealt = {p for p in modules if p.name in _shards(3)}  # not the slow-only ones
    assert len(dealt) > 100 and not dealt & every
    assert all(sum(p in shard for shard in kept) == 1 for p in dealt)
    shared = [sum(p.stat().st_size for p in shard & dealt) for shard in kept]
    assert shared[0] == 0 and max(shared[1:]) < 2 * min(shared[1:]), shared
    monkeypatch.delenv("DURABLE_TEST_SHARD")
    assert not any(map(_in_another_shard, modules))
