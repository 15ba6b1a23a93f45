"""An eleventh round of the peers' own test cases, with the scripts their
users write around them: Prefect's INPUTS + TASK_SOURCE cache policy
(tests/test_cache_policies.py, test_tasks.py `test_cache_hits_between_flows`)
and DBOS's recovery of a workflow by id (tests/test_dbos.py
`test_recovery_workflow`), where the task or step reads its settings from
a module of the user's (`from settings import CFG`, CFG made from the
environment) or from the command line (`ARGS = parser.parse_args()`).
Those are inputs as much as the arguments are: a script run again with
another setting is a changed call (a cache miss, a refused resume), never
the output computed with the old one. The rest of the round is in
tests/test_peer_ports_eleventh_state.py, earlier rounds in
tests/test_peer_ports*.py. Executions are counted by the step bodies
themselves, in a file (real processes)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from tests.scripts import counted, refused_then_replayed, run_in, suspending

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

# -- a settings module of the user's, made from the environment -------------------

SETTINGS = {
    "dict": 'import os\nCFG = {"k": float(os.environ["K"])}\n',
    "object": (
        "import os\n\nclass Settings:\n    def __init__(self):\n"
        '        self.k = float(os.environ["K"])\n\n    def __getitem__(self, key):\n'
        "        return self.k\n\nCFG = Settings()\n"
    ),
}

FROM_SETTINGS = """
import os
import durable
from settings import IMPORTED
""" + counted("scale", 'x * CFG["k" if isinstance(CFG, dict) else 0]') + suspending("scale(x)")


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "imported"), [*((k, "CFG") for k in sorted(SETTINGS)), ("dict", "*")])
def test_dbos_recovery_with_settings_imported_from_a_module_of_the_users(
    tmp_path: Path, kind: str, imported: str
) -> None:
    """test_recovery_workflow, the workflow's step reading `CFG` of the
    user's settings module, made there from the environment: a recovery
    with K=3 is refused (it printed the value computed with K=2), one with
    K=2 again replays the step. Seen failing: `from settings import CFG`
    counted by the import statement and by settings' text, the same
    whatever K is, where `import settings` and `settings.CFG` counted the
    contents; `from settings import *` counted nothing of settings'."""
    (tmp_path / "settings.py").write_text(SETTINGS[kind])
    (tmp_path / "flow.py").write_text(FROM_SETTINGS.replace("IMPORTED", imported))
    refused_then_replayed(tmp_path, "20.0")
    assert (tmp_path / "count").read_text().split() == ["scale"]


CACHED_FROM_SETTINGS = """
import os
import durable
from settings import CFG
""" + counted("scale", 'x * CFG["k"]').replace("@durable.step", "@durable.step(cache=True)") + """
print("value", scale(10))
"""


@pytest.mark.slow
def test_prefect_cache_policy_inputs_with_settings_imported_from_a_module(tmp_path: Path) -> None:
    """test_cache_hits_between_flows under INPUTS + TASK_SOURCE, the task
    reading `CFG` of the settings module: K=2, K=3, K=2 compute twice and
    hit once. Seen failing: K=3 was served the output of K=2 (20.0)."""
    (tmp_path / "settings.py").write_text(SETTINGS["dict"])
    (tmp_path / "flow.py").write_text(CACHED_FROM_SETTINGS)
    outs = [run_in(tmp_path, "flow.py", K=k).strip() for k in ("2", "3", "2")]
    assert outs == ["value 20.0", "value 30.0", "value 20.0"]
    assert (tmp_path / "count").read_text().split() == ["scale", "scale"]


# -- the command line: argparse, sys.argv --------------------------------------------

FROM_ARGV = {
    "argparse": """
import argparse
PARSER = argparse.ArgumentParser()
PARSER.add_argument("--k", type=float)
ARGS = PARSER.parse_args()
K = lambda: ARGS.k
""",
    "argparse-vars": """
import argparse
PARSER = argparse.ArgumentParser()
PARSER.add_argument("--k", type=float)
CFG = vars(PARSER.parse_known_args()[0])
K = lambda: CFG["k"]
""",
    "global-in-main": """
import argparse
RATE = None
def main():
    global RATE
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=float)
    RATE = parser.parse_args().k
main()
K = lambda: RATE
""",
    "sys.argv": """
import sys
CFG = {"k": float(sys.argv[2])}
K = lambda: CFG["k"]
""",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FROM_ARGV))
def test_dbos_recovery_of_a_script_given_other_command_line_arguments(
    tmp_path: Path, kind: str
) -> None:
    """test_recovery_workflow of a script whose step reads what its command
    line said (`python flow.py --k 2`): run again with `--k 3` it is
    refused, not given the value computed with 2; with `--k 2` it replays.
    Seen failing: a namespace or dict made from the command line counted by
    its statement, the same text whatever was typed; so did a number that
    `main()` sets with `global` (it counted by the statements binding it,
    not by its value, as a counter a step bumps does)."""
    script = "import os\nimport durable\n" + FROM_ARGV[kind]
    script += counted("scale", "x * K()") + suspending("scale(x)")
    (tmp_path / "flow.py").write_text(script)
    assert "suspended" in run_in(tmp_path, "flow.py", "--k", "2", STOP="1")
    out = run_in(tmp_path, "flow.py", "--k", "3")
    assert "DefinitionChangedError" in out and "value 20.0" not in out
    assert "value 20.0" in run_in(tmp_path, "flow.py", "--k", "2")
    assert (tmp_path / "count").read_text().split() == ["scale"]


PARTIAL = """
import functools, os
import durable
ROUND = functools.partial(round, ndigits=int(os.environ["K"]))
""" + counted("third", "ROUND(x / 3)") + suspending("third(x)")


@pytest.mark.slow
def test_joblib_memory_partial_of_a_library_function_made_from_the_environment(
    tmp_path: Path,
) -> None:
    """test_memory_partial's partial, as a global the step calls, binding a
    library's function to a value read from the environment: K=3 after K=2
    is refused, K=2 again replays. Seen failing: the partial counted by its
    statement (a user's function's partial counted its arguments already),
    and K=3 got the 3.33 computed with K=2."""
    (tmp_path / "flow.py").write_text(PARTIAL)
    refused_then_replayed(tmp_path, "3.33")
    assert (tmp_path / "count").read_text().split() == ["third"]


LISTED = """
import os
from pathlib import Path
import durable
FILES = sorted(p.name for p in Path("data").glob("*.txt"))
""" + counted("batches", "len(FILES) * x") + suspending("batches(x)")


@pytest.mark.slow
def test_prefect_cache_policy_inputs_with_a_folder_listed_at_import(tmp_path: Path) -> None:
    """A task reading the list of input files its flow's module globbed at
    import: a recovery after a file was added is refused (it printed the
    count of the old listing), one with the listing as it was replays.
    Seen failing: the listing counted by its statement's text alone."""
    (tmp_path / "data").mkdir()
    for name in ("a", "b"):
        (tmp_path / "data" / f"{name}.txt").write_text(name)
    (tmp_path / "flow.py").write_text(LISTED)
    assert "suspended" in run_in(tmp_path, "flow.py", STOP="1")
    (tmp_path / "data" / "c.txt").write_text("c")
    out = run_in(tmp_path, "flow.py")
    assert "DefinitionChangedError" in out and "value 20" not in out
    (tmp_path / "data" / "c.txt").unlink()
    assert "value 20" in run_in(tmp_path, "flow.py")
    assert (tmp_path / "count").read_text().split() == ["batches"]


CLASS_LIST = """
import os
import durable

class Model:
    RATES = [float(os.environ["K"])]

    def predict(self, x):
        return x * self.RATES[0]
""" + counted("predict", "model.predict(x)").replace("def predict(x)", "def predict(model, x)") + suspending(
    "predict(Model(), x)"
)


@pytest.mark.slow
def test_dbos_recovery_of_a_class_list_made_from_the_environment(tmp_path: Path) -> None:
    """test_recovery_workflow, the step given an object whose class body
    makes a list from the environment (`RATES = [float(os.environ["K"])]`):
    K=3 is refused, K=2 replays. Seen failing: only the class's immutable
    constants counted by value, the list by the statement's text."""
    (tmp_path / "flow.py").write_text(CLASS_LIST)
    refused_then_replayed(tmp_path, "20.0")
    assert (tmp_path / "count").read_text().split() == ["predict"]



FROM_A_DATABASE = """
import os, sqlite3
import durable
RATES = dict(sqlite3.connect("settings.db").execute("select name, value from rates").fetchall())
""" + counted("scale", 'x * RATES["k"]') + suspending("scale(x)")


def _set_rate(folder: Path, value: float) -> None:
    with contextlib.closing(sqlite3.connect(folder / "settings.db")) as db, db:
        db.execute("create table if not exists rates (name text primary key, value real)")
        db.execute("insert or replace into rates values ('k', ?)", (value,))


@pytest.mark.slow
def test_dbos_recovery_with_settings_read_from_a_database(tmp_path: Path) -> None:
    """test_recovery_workflow, the step reading rates its module fetched
    from a database at import (`.fetchall()`): after the row changed the
    recovery is refused, with the row as it was it replays. Seen failing:
    the dict counted by its statement's text."""
    _set_rate(tmp_path, 2.0)
    (tmp_path / "flow.py").write_text(FROM_A_DATABASE)
    assert "suspended" in run_in(tmp_path, "flow.py", STOP="1")
    _set_rate(tmp_path, 3.0)
    out = run_in(tmp_path, "flow.py")
    assert "DefinitionChangedError" in out and "value 20.0" not in out
    _set_rate(tmp_path, 2.0)
    assert "value 20.0" in run_in(tmp_path, "flow.py")
    assert (tmp_path / "count").read_text().split() == ["scale"]
