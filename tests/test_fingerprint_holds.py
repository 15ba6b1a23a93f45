"""What a step calls through something it holds, edited between two
processes: the first runs the workflow and dies after the first step, the
file is edited, the second resumes the run. The step whose code changed
must not be replayed: the resume is refused, naming what changed, and the
step ran once in all."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from .scripts import run_in, twice

FLOW = """
import os
import durable
{header}

def mark(tag):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(tag + "\\n")

{first}

@durable.step
def crash():
    if os.environ.get("CRASH"):
        os._exit(1)
    return 0

@durable.workflow
def flow():
    value = first()
    crash()
    return value
"""
STEP = """
@durable.step
def first():
    mark("first")
    return {body}
"""
RUN = """
import durable, flow
try:
    print("result", flow.flow.with_options(run_id="r1")())
except durable.DefinitionChangedError as e:
    print("refused", e)
"""

# name: (files, (file, old, new), what the refusal says)
CASES = {
    # A factory's arguments live in the closure, where a list counts by type.
    "step-made-by-a-factory": (
        {
            "flow.py": FLOW.format(
                header="",
                first="""
def make_step(weights):
    @durable.step
    def first():
        mark("first")
        return sum(weights)
    return first

first = make_step([1, 2])
""",
            )
        },
        ("flow.py", "[1, 2]", "[1, 5]"),
        "global first changed",
    ),
    "helper-made-by-a-factory": (
        {
            "flow.py": FLOW.format(
                header="""
def make(table):
    def lookup(key):
        return table[key]
    return lookup

lookup = make({"a": 1})
""",
                first=STEP.format(body="lookup('a')"),
            )
        },
        ("flow.py", '{"a": 1}', '{"a": 2}'),
        "global lookup changed",
    ),
    "module-used-as-a-whole": (
        {
            "helpers.py": "def clean_a(x):\n    return x + 1\n",
            "flow.py": FLOW.format(
                header="import helpers",
                first=STEP.format(body="getattr(helpers, 'clean_' + 'a')(1)"),
            ),
        },
        ("helpers.py", "x + 1", "x + 2"),
        "helper helpers.clean_a changed",
    ),
    # `globals()` and `eval` reach any name of the step's own module: a
    # lookup by a string built at run time, as `getattr(helpers, ...)`.
    "own-module-through-globals": (
        {
            "flow.py": FLOW.format(
                header="def clean_a(x):\n    return x + 1\n",
                first=STEP.format(body="globals()['clean_' + 'a'](1)"),
            )
        },
        ("flow.py", "x + 1", "x + 2"),
        "helper flow.clean_a changed",
    ),
    "own-module-through-eval": (
        {
            "flow.py": FLOW.format(
                header="def clean_a(x):\n    return x + 1\n",
                first=STEP.format(body="eval('clean_' + 'a(1)')"),
            )
        },
        ("flow.py", "x + 1", "x + 2"),
        "helper flow.clean_a changed",
    ),
    "functions-an-object-holds": (
        {
            "plugins.py": """
class Registry:
    def __init__(self):
        self.found = {}

    def register(self, fn):
        self.found[fn.__name__] = fn
        return fn

registry = Registry()

@registry.register
def shout(x):
    return x.upper()
""",
            "flow.py": FLOW.format(
                header="from plugins import registry",
                first=STEP.format(body="registry.found['shout']('a')"),
            ),
        },
        ("plugins.py", "x.upper()", "x.lower()"),
        "helper plugins.shout changed",
    ),
    "singledispatch-implementation": (
        {
            "flow.py": FLOW.format(
                header="""
import functools

@functools.singledispatch
def render(x):
    return str(x)

@render.register
def _(x: int):
    return x * 2
""",
                first=STEP.format(body="render(3)"),
            )
        },
        ("flow.py", "x * 2", "x * 3"),
        "helper flow._ changed",
    ),
}


def run(folder: Path, code: str = RUN, **env: str) -> str:
    """`code` in a fresh interpreter in `folder`, with its store and count file."""
    return run_in(folder, "-c", code, **env)


def two_runs(root: Path, cases: dict[str, dict[str, str] | None]) -> dict[str, Any]:
    """Each case's files (CASES, by the name before any ":") written to a
    folder of its own, run until it dies after `first` is recorded, then
    edited and run again with the environment given, or run again as it
    is (None): `twice`'s outputs and counts (a child a run made 16 a
    Python)."""
    folders = {}
    for name in cases:
        folders[name] = root / name
        folders[name].mkdir()
        for rel, text in CASES[name.split(":")[0]][0].items():
            (folders[name] / rel).write_text(textwrap.dedent(text).lstrip())

    def edit(name: str, folder: Path) -> dict[str, str]:
        given = cases[name]
        if given is not None:
            edited, old, new = CASES[name.split(":")[0]][1]
            path = folder / edited
            assert old in path.read_text()
            path.write_text(path.read_text().replace(old, new))
        return given or {}

    return twice(folders, RUN, edit, {"CRASH": "1"})


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every case edited, and the factory's step again under on_change="rerun"."""
    cases: dict[str, dict[str, str] | None] = {name: {} for name in CASES}
    cases["step-made-by-a-factory:rerun"] = {"DURABLE_ON_CHANGE": "rerun"}
    return two_runs(tmp_path_factory.mktemp("edited"), cases)


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_edit_of_what_a_step_holds_is_never_replayed(edited: dict[str, Any], name: str) -> None:
    first, count, second, after = edited[name]
    assert count == ["first"], first  # dies after `first` is recorded
    assert "refused" in second and CASES[name][2] in second, second
    assert after == ["first"]  # never replayed nor rerun


def test_a_step_made_by_a_factory_reruns_when_the_statement_that_made_it_changed(
    edited: dict[str, Any],
) -> None:
    """on_change="rerun" compares each step's own fingerprint: the statement
    must count there, not only in the workflow that names the step."""
    _, _, second, after = edited["step-made-by-a-factory:rerun"]
    assert "result 6" in second, second  # 1 + 5, never the recorded 1 + 2
    assert after == ["first", "first"]


@pytest.fixture(scope="module")
def unedited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return two_runs(tmp_path_factory.mktemp("unedited"), dict.fromkeys(CASES))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unedited_run_resumes(unedited: dict[str, Any], name: str) -> None:
    _, _, second, after = unedited[name]
    assert "result" in second and "refused" not in second, second
    assert after == ["first"]  # replayed
