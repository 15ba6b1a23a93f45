"""The fingerprint describes the code that runs.

A module file edited after it was imported no longer describes the running
functions (in real processes: test_fingerprint_source_edited.py). A workflow's own
fingerprint is computed for every call, so a notebook cell that rebinds a
constant or a helper is seen (a real IPython shell in a child process)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint.fingerprint import fingerprint_function
from durable.errors import ConfigurationError

from .clikit import run_cells


def test_an_edited_helper_module_is_refused_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "helper_mod.py").write_text("def clean(x):\n    return x.strip()\n")
    (tmp_path / "uses_helper.py").write_text(
        "from helper_mod import clean\n\ndef target(x):\n    return clean(x)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for name in ("helper_mod", "uses_helper"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import uses_helper  # type: ignore[import-not-found]

    before = fingerprint_function(uses_helper.target)
    (tmp_path / "helper_mod.py").write_text("def clean(x):\n    return x.lstrip()\n")
    with pytest.raises(ConfigurationError, match=r"helper_mod\.clean in .* no longer matches"):
        fingerprint_function(uses_helper.target)
    (tmp_path / "helper_mod.py").write_text("def clean(x):\n    return x.strip()  # back\n")
    assert fingerprint_function(uses_helper.target) == before


def test_an_edit_to_a_line_read_for_a_binding_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`LIMITS = [1, 2]` is counted by its statement: a file edited after
    import cannot vouch for that statement either."""
    source = "LIMITS = [1, 2]\n\n\ndef target(x):\n    return x in LIMITS\n"
    (tmp_path / "bound_mod.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delitem(sys.modules, "bound_mod", raising=False)
    import bound_mod  # type: ignore[import-not-found]

    fingerprint_function(bound_mod.target)
    (tmp_path / "bound_mod.py").write_text("LIMITS = [1, 2, 3]\n\n" + source.split("\n", 1)[1])
    with pytest.raises(ConfigurationError, match="no longer matches"):
        fingerprint_function(bound_mod.target)


def test_a_binding_read_from_another_edited_module_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cfg.ITEMS` is counted by its statement in cfg's file: that file is
    checked against cfg's running functions before it is believed."""
    cfg = "ITEMS = [1, 2]\n\n\ndef unrelated():\n    return 1\n"
    (tmp_path / "cfg_mod.py").write_text(cfg)
    (tmp_path / "reads_cfg.py").write_text(
        "import cfg_mod\n\n\ndef target(x):\n    return x in cfg_mod.ITEMS\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for name in ("cfg_mod", "reads_cfg"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import reads_cfg  # type: ignore[import-not-found]

    assert "global:cfg_mod.ITEMS" in fingerprint_function(reads_cfg.target).parts
    (tmp_path / "cfg_mod.py").write_text(cfg.replace("[1, 2]", "[\n    1,\n    3,\n]"))
    with pytest.raises(ConfigurationError, match=r"source of cfg_mod in .* no longer matches"):
        fingerprint_function(reads_cfg.target)


# ---------------------------------------------------------------- notebooks


CELLS = [
    """\
import os
import durable

def bump(name):
    with open(os.path.join(os.environ["FP_COUNTS"], name), "a") as f:
        f.write("x")

def go(run_id):
    try:
        print("RESULT", run_id, pipeline.with_options(run_id=run_id)(3))
    except durable.DurableError as e:
        print("REFUSED", run_id, type(e).__name__, str(e).replace(chr(10), " | "))
""",
    "FACTOR = 2\nSEEN = []\n\ndef helper(x):\n    return x + 1\n\nclass Cfg:\n    SCALE = 1\n",
    """\
@durable.step
def load(n):
    bump("load")
    SEEN.append(n)  # program state: must not make the run look changed
    return list(range(n))

@durable.workflow
def pipeline(n):
    return (sum(load(n)) * FACTOR + helper(0)) * Cfg.SCALE
""",
    'go("a")',
    'go("a")',  # the same call again: SEEN has grown, nothing else changed
    'FACTOR = 3\ngo("a")',  # a constant the body reads, rebound
    'go("b")',
    'def helper(x):\n    return x + 5\ngo("b")',  # a helper the body calls, rebound
    'go("c")',
    'Cfg.SCALE = 2\ngo("c")',  # a class attribute the body reads, set
]


def test_a_notebook_cell_that_rebinds_a_constant_or_helper_is_seen(tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    (tmp_path / "counts").mkdir()
    done = run_cells(tmp_path, CELLS, FP_COUNTS=str(tmp_path / "counts"))
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("RESULT", "REFUSED"))]
    assert lines[:3] == ["RESULT a 7", "RESULT a 7", lines[2]], done.stdout
    assert lines[2].startswith("REFUSED a DefinitionChangedError"), lines
    assert "constant FACTOR changed" in lines[2]
    assert lines[3] == "RESULT b 10"
    assert lines[4].startswith("REFUSED b DefinitionChangedError"), lines
    assert "helper __main__.helper changed" in lines[4]
    assert lines[5] == "RESULT c 14"
    assert lines[6].startswith("REFUSED c DefinitionChangedError"), lines
    assert "constant Cfg.SCALE changed" in lines[6]
    assert len(lines) == 7
    assert (tmp_path / "counts" / "load").read_text() == "xxx"  # once each for a, b and c


def test_cell_functions_are_checked_against_their_cell() -> None:
    """A cell (source registered in linecache, no file) is the source of its
    code; a cell text that is not is refused like an edited file."""
    import linecache

    name = "/tmp/ipykernel_0/cell_check.py"
    source = textwrap.dedent(
        """
        def step(x):
            return x + 1
        """
    )
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        ns: dict[str, Any] = {"__name__": "__main__"}
        exec(compile(source, name, "exec"), ns)
        assert fingerprint_function(ns["step"]).identity == "__main__.step"
        edited = source.replace("x + 1", "x + 2")
        linecache.cache[name] = (len(edited), None, edited.splitlines(True), name)
        with pytest.raises(ConfigurationError, match="no longer matches"):
            fingerprint_function(ns["step"])
    finally:
        linecache.cache.pop(name, None)


# ---------------------------------------------------------------- import hooks


def test_a_step_with_an_assert_in_a_pytest_test_module_is_checked_exactly() -> None:
    """This module's asserts are rewritten by pytest: the check redoes the
    rewriting rather than calling this code changed."""

    def checked(x: int) -> int:
        assert x > 0, "positive"
        return x + 1

    assert fingerprint_function(checked).identity.endswith("checked")
    assert type(checked.__globals__["__loader__"]).__module__ == "_pytest.assertion.rewrite"


HOOKED = """\
import importlib.machinery, importlib.util, sys

class Hooked(importlib.machinery.SourceFileLoader):
    '''An import hook that could transform the code (typeguard, beartype...).'''

def load(name, path):
    loader = Hooked(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
"""


def test_code_from_another_import_hook_gets_the_parameter_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """durable cannot redo another hook's transformation: for such modules
    only the first line, name and parameters are checked (README)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path = tmp_path / "hooked_mod.py"
    path.write_text("def target(x):\n    return x + 1\n")
    ns: dict[str, Any] = {}
    exec(HOOKED, ns)
    module = ns["load"]("hooked_mod", str(path))
    try:
        fingerprint_function(module.target)
        path.write_text("def target(y):\n    return y + 1\n")
        with pytest.raises(ConfigurationError, match="no longer matches"):
            fingerprint_function(module.target)
    finally:
        sys.modules.pop("hooked_mod", None)


def test_source_is_parsed_by_one_thread_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workflows started together in a thread pool are fingerprinted on first
    use, each parsing its file: CPython 3.11 counts the recursion depth of its
    AST conversion in state threads share, so two parses at once could raise
    "SystemError: AST constructor recursion depth mismatch" to a run (seen
    with ten runs started at once). Parsing and compiling source hold a lock."""
    import ast

    from durable._fingerprint import source

    held: list[bool] = []
    real = ast.parse

    def watched(text: str, *args: Any, **kwargs: Any) -> ast.Module:
        lock = getattr(source, "_PARSING", None)  # without it: a failure, not an error
        held.append(lock is not None and lock.locked())
        return real(text, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", watched)
    source.parse("x = 1  # test_source_is_parsed_by_one_thread_at_a_time\n")
    source._compiled("y = 2  # test_source_is_parsed_by_one_thread_at_a_time\n", 0, None, "f.py")
    assert held == [True, True]


RELOAD_CELLS = [
    "import importlib, os, pathlib\nimport durable\nimport helpmod\nfrom helpmod import helper",
    "@durable.step\ndef work(x):\n    with open(os.environ['FP_COUNTS'], 'a') as f:\n"
    "        f.write('work\\n')\n    return helper(x)\n\n"
    "@durable.workflow\ndef flow(x: int) -> int:\n    return work(x)\n\nprint('RESULT', flow(1))",
    "pathlib.Path('helpmod.py').write_text('def helper(x):\\n    return x + 100\\n')\n"
    "importlib.reload(helpmod)",
    "try:\n    flow(2)\nexcept durable.ConfigurationError as e:\n    print('REFUSED', e)",
    "from helpmod import helper",  # what the refusal says to do
    "print('RESULT', flow(2))",
]


def test_after_a_reload_the_refusal_says_to_rerun_the_from_import(tmp_path: Path) -> None:
    # `importlib.reload(mod)` leaves `from mod import helper` bound to the old
    # function; the refusal said "re-import the module (importlib.reload...)",
    # which the user had just done. It must name the import to re-run.
    pytest.importorskip("IPython")
    (tmp_path / "helpmod.py").write_text("def helper(x):\n    return x + 1\n")
    done = run_cells(tmp_path, RELOAD_CELLS, FP_COUNTS=str(tmp_path / "counts"))
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("RESULT", "REFUSED"))]
    assert lines[0] == "RESULT 2" and lines[2] == "RESULT 102", done.stdout
    assert lines[1].startswith("REFUSED the source of helpmod.helper"), lines
    assert "re-run the cell or statement that did `from helpmod import ...`" in lines[1]
    assert len(lines) == 3
    assert (tmp_path / "counts").read_text() == "work\nwork\n"  # flow(1), then flow(2) once


def test_a_files_text_is_read_again_when_its_stat_or_its_lines_in_linecache_change(
    tmp_path: Path,
) -> None:
    """`source_of` keeps the text it last read of a file while the file's
    stat and the lines linecache holds for it are the ones it read: either
    changed, it reads again."""
    import linecache
    import os

    from durable._fingerprint.source import source_of

    path = tmp_path / "kept_text.py"
    path.write_text("X = 1\n")
    name = str(path)
    first = source_of(name, None)
    assert first.text == "X = 1\n" and source_of(name, None) is first
    size, mtime, _, full = linecache.cache[name]
    linecache.cache[name] = (size, mtime, ["X = 2\n"], full)  # another reader's lines
    assert source_of(name, None).text == "X = 2\n"
    path.write_text("X = 33\n")
    os.utime(path, ns=(1, 1))  # a stat of its own, whatever the clock's tick
    assert source_of(name, None).text == "X = 33\n"
