"""A script's `main()` that sets a global a step reads (`global K; K = 0`)
and then makes it through a call (`setk(BASE)`, a helper calling one,
`setattr(sys.modules[__name__], "K", BASE)`, a method of an object of
yours or a partial that calls it, the test of an `if`, a function main()
imports): the call's statement is one
K may be made from (`handedpart._made_part`), so what it reads (BASE)
counts for the step. Left out, the user's edit of BASE between two runs
was replayed with the old output (stale60's narrowing; before it, main()
was read whole and the edit refused). In-process, `runpy` running the
script as `__main__` once per phase, the user's edit between them."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = """
import functools
import sys

import durable

BASE = {base}
K = 1


@durable.step
def fetch(i):
    with open(__file__ + ".count", "a") as f:
        f.write("ran\\n")
    return i * K


@durable.workflow(run_id="made")
def pipeline(i):
    return fetch(i)


def setk(n):
    global K
    K = n


def configure():
    setk(BASE)


class Setter:
    def apply(self, n):
        setk(n)


SETTER = Setter()
PARTIAL = functools.partial(setk)


def main():
    global K
    K = 0
    {makes}
    try:
        print("value", pipeline(3))
    except durable.DefinitionChangedError as e:
        print("refused", e)


if __name__ == "__main__":
    main()
"""


HELPERS = """
import sys


def setk(n):
    sys.modules["__main__"].K = n
"""


@pytest.fixture(autouse=True)
def helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Modules of the user's, beside the script, imported afresh by each test."""
    (tmp_path / "review53_helpers.py").write_text(HELPERS)
    (tmp_path / "review53_size.py").write_text("def size(log):\n    return len(log)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("review53_helpers", "review53_size"):
        monkeypatch.delitem(sys.modules, module, raising=False)


@pytest.mark.parametrize(
    "makes",
    ["setk(BASE)", "configure()", 'setattr(sys.modules[__name__], "K", BASE)', "SETTER.apply(BASE)", "PARTIAL(BASE)",
     "if setk(BASE):\n        pass", "from review53_helpers import setk as other\n    other(BASE)"],
)
def test_a_global_main_makes_through_a_call_counts_what_the_call_is_given(
    makes: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setattr(sys, "argv", ["flow.py"])
    script = tmp_path / "flow.py"
    outs = []
    for base in (2, 5):  # the user's edit between the two runs
        script.write_text(SCRIPT.replace("{base}", str(base)).replace("{makes}", makes))
        runpy.run_path(str(script), run_name="__main__")
        outs.append(capsys.readouterr().out.strip())
    assert outs[0] == "value 6"
    assert outs[1].startswith("refused") and "BASE" in outs[1], outs[1]  # was 'value 6': stale
    assert len(Path(f"{script}.count").read_text().split()) == 1


SHOWN = """
import durable
import review53_size

CFG = {"k": 1}
LOG = []


@durable.step
def fetch(i):
    with open(__file__ + ".count", "a") as f:
        f.write("ran\\n")
    LOG.append(i)
    return i * CFG["k"]


@durable.workflow(run_id="shown")
def pipeline(i):
    return fetch(i)


def report(log):
    print("log", review53_size.size(log))


def main():
    CFG["k"] = 2
    LOG.clear()
    first = pipeline(3)
    second = pipeline(3)
    report(LOG)
    print("values", first, second)


if __name__ == "__main__":
    main()
"""


def test_a_helper_main_shows_the_log_with_is_no_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report(LOG)`, of a function naming neither CFG nor what binds it
    (a function of the user's module it calls neither), makes nothing the
    step reads: the second call replays."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setattr(sys, "argv", ["flow.py"])
    script = tmp_path / "flow.py"
    script.write_text(SHOWN)
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.split() == ["log", "1", "values", "6", "6"]
    assert len(Path(f"{script}.count").read_text().split()) == 1
