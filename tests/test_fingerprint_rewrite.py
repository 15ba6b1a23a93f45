"""A step of a module pytest loaded (its asserts rewritten) is checked
against its file as any step is: compiled again and compared with the code
that runs. Redoing pytest's rewriting of a whole module is the costly part
of that check (a sixth of collecting this suite), and it changes only the
code of functions that hold an `assert`: a step without one is compared
with the plain compile of its file, a step with one with the rewritten
compile, and an edit of either is still refused."""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint import source
from durable._fingerprint.fingerprint import fingerprint_function
from durable.errors import ConfigurationError

MODULE = """\
def plain(x):
    return x + 1


def asserting(x):
    assert x > 0, "positive"
    return x + 1


def outer(x):
    assert x > 0

    def inner(y):
        return y * 2

    return inner
"""


@pytest.fixture
def rewrites(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose asserts the check rewrote again."""
    done: list[str] = []
    real = source._rewrite_asserts

    def counted(tree: Any, text: str, filename: str, hook: Any) -> None:
        done.append(filename)
        real(tree, text, filename, hook)

    monkeypatch.setattr(source, "_rewrite_asserts", counted)
    return done


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[tuple[types.ModuleType, Path]]:
    """MODULE, written to a file of its own and imported by pytest's
    assertion rewriter, as pytest imports a test module."""
    hook = sys.modules[__name__].__loader__
    assert type(hook).__module__ == "_pytest.assertion.rewrite"
    path = tmp_path / "rewritten_mod.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("rewritten_mod", path, loader=hook)  # type: ignore[arg-type]
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rewritten_mod"] = module
    try:
        spec.loader.exec_module(module)
        assert "@py_assert" in str(module.asserting.__code__.co_varnames)  # really rewritten
        yield module, path
    finally:
        sys.modules.pop("rewritten_mod", None)


def test_a_step_without_an_assert_is_checked_without_redoing_the_rewrite(
    loaded: tuple[types.ModuleType, Path], rewrites: list[str]
) -> None:
    module, path = loaded
    assert fingerprint_function(module.plain).identity == "rewritten_mod.plain"
    assert fingerprint_function(module.outer(1)).identity.endswith("inner")
    assert rewrites == []
    assert fingerprint_function(module.asserting).identity == "rewritten_mod.asserting"
    assert rewrites == [str(path)]  # once for the module, kept for its other functions
    fingerprint_function(module.outer)
    assert rewrites == [str(path)]


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("plain", "return x + 1\n\n\ndef asserting", "return x + 2\n\n\ndef asserting"),
        ("asserting", '"positive"\n    return x + 1', '"positive"\n    return x + 2'),
        ("asserting", "assert x > 0,", "assert x > 1,"),
        ("inner", "return y * 2", "return y * 3"),
    ],
)
def test_an_edit_of_a_step_of_a_rewritten_module_is_refused(
    loaded: tuple[types.ModuleType, Path], name: str, old: str, new: str
) -> None:
    module, path = loaded
    fn = module.outer(1) if name == "inner" else getattr(module, name)
    fingerprint_function(fn)
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    with pytest.raises(ConfigurationError, match="no longer matches"):
        fingerprint_function(fn)
