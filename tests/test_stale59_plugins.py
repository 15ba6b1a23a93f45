"""Plugins a step finds and imports by a name built at run time, as plugin
systems do: `import_module(f"plugins.{info.name}")` over
`pkgutil.iter_modules(plugins.__path__)`, `import_module("plugins." + name)`
over a list of names, `plugins.__name__ + "." + name`. Nothing in the text
names a plugin module, so an edit of `plugins/p1.py`, or a plugin added to
the folder, was not seen: the resume replayed what the old plugins computed
(`value {'p1': 11}`). Every module file of the package such a function
names now counts by its text; with the files unchanged the resume replays.
The same for a Python file a step runs by its path (`runpy.run_path(
"plugins/p1.py")`, or a loader of the user's calling
`spec_from_file_location`), or starts as a process
(`subprocess.check_output([sys.executable, "plugins/p1.py", ...])`): it
counts by its bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import RUN_FLOW, twice

pytestmark = pytest.mark.slow  # two interpreters forking the phases

FLOW = """
import importlib, importlib.util, os, pkgutil, runpy, subprocess, sys
import durable
import plugins

def load(path):
    spec = importlib.util.spec_from_file_location("loaded", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def discover():
    found = {{}}
    {finds}
    return found

@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    return {{n: f(x) for n, f in sorted(discover().items())}}

@durable.workflow(run_id="r1")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
ITER = "for info in pkgutil.iter_modules(plugins.__path__):\n        found[info.name] = importlib.import_module({name}).run"
FINDS = {
    "fstring": ITER.format(name='f"plugins.{info.name}"'),
    "package_name": ITER.format(name='plugins.__name__ + "." + info.name'),
    "run_path": 'found["p1"] = runpy.run_path("plugins/p1.py")["run"]',
    "loader": 'found["p1"] = load("plugins/p1.py").run',
    "subprocess": 'found["p1"] = lambda x: int(subprocess.check_output([sys.executable, "plugins/p1.py", str(x)]))',
}
# name: (how it finds them, the file written between the runs, its text)
P1 = "import sys\n\ndef run(x):\n    return x + 1\n\nif __name__ == '__main__':\n    print(run(int(sys.argv[1])))\n"
CASES = {
    "fstring": ("fstring", "p1.py", P1.replace("x + 1", "x + 2")),
    "added": ("fstring", "p2.py", "def run(x):\n    return x * 10\n"),
    "package_name": ("package_name", "p1.py", P1.replace("x + 1", "x + 2")),
    "run_path": ("run_path", "p1.py", P1.replace("x + 1", "x + 2")),
    "loader": ("loader", "p1.py", P1.replace("x + 1", "x + 2")),
    "subprocess": ("subprocess", "p1.py", P1.replace("x + 1", "x + 2")),
    "same": ("fstring", "p1.py", P1),
}


def test_an_edited_or_added_plugin_is_a_changed_call(tmp_path_factory: pytest.TempPathFactory) -> None:
    folders: dict[str, Path] = {}
    for name, (finds, _, _) in CASES.items():
        folders[name] = folder = tmp_path_factory.mktemp(name)
        (folder / "flow.py").write_text(FLOW.format(finds=FINDS[finds]))
        (folder / "plugins").mkdir()
        (folder / "plugins" / "__init__.py").write_text("")
        (folder / "plugins" / "p1.py").write_text(P1)

    def between(name: str, folder: Path) -> dict[str, str]:
        _, file, text = CASES[name]
        (folder / "plugins" / file).write_text(text)
        return {}

    runs = twice(folders, RUN_FLOW, between, {"STOP": "1"})
    for name, (first, count, second, after) in runs.items():
        assert "suspended" in first and count == ["s"], (name, first)
        if name == "same":
            assert "value {'p1': 11}" in second and after == ["s"], (name, second)
        else:  # was: value {'p1': 11}, the old plugins' output replayed
            assert "refused" in second and "changed" in second and after == ["s"], (name, second)
