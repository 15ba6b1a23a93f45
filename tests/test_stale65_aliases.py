"""A name a module binds in more than one place, to a library's module or
function, which ran deciding what it holds: `import json as ser` then
`import pickle as ser` under a flag, `ser = json if FAST else pickle`,
`try: import orjson as js` / `except ImportError: import json as js`, `from
json import dumps as f` then `from pickle import dumps as f`. A step's
`ser.dumps(x)` counted the library's function only (its code, whichever
module it came from, was no part of the fingerprint), `f` by its
statements, the same text whichever ran: recorded without the flag (or
with the library installed), the resume with it replayed json's value (1
for pickle's 7, 6 for json's 1). Each now counts by which module or
function the name holds; resumed as recorded, it replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # three processes

HEAD = """import os, sys
import durable
if not os.environ.get("NOLIB"):  # `pip uninstall fastser` between the runs
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
"""

# name: (how the module binds the name, what the step returns)
CASES = {
    "alias": ("import json as ser\nif os.environ.get('ALT'):\n    import pickle as ser", "len(ser.dumps(x))"),
    "ifexpr": ("import json, pickle\nFAST = not os.environ.get('ALT')\nser = json if FAST else pickle", "len(ser.dumps(x))"),
    "tryimp": ("try:\n    import fastser as js\nexcept ImportError:\n    import json as js", "len(js.dumps(x))"),
    "fromflag": ("from json import dumps as f\nif os.environ.get('ALT'):\n    from pickle import dumps as f", "len(f(x))"),
}

STEP = """
{setup}

@durable.step
def s(x):
    count("{name}")
    return {expr}

@durable.workflow(run_id="r-{name}")
def wf():
    out = s(5)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

RUN = """
import importlib, durable
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("s65_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "bound " in str(e) else e)
"""


def test_a_name_bound_to_one_library_or_another_counts_by_which(tmp_path: Path) -> None:
    lib = tmp_path / "site-packages"
    lib.mkdir()
    (lib / "fastser.py").write_text("def dumps(x):\n    return 'fast:' + str(x)\n")
    for n, (setup, expr) in CASES.items():
        (tmp_path / f"s65_{n}.py").write_text(HEAD + STEP.format(name=n, setup=setup, expr=expr))
    run = RUN.format(names=list(CASES))
    first, second, third = run_each(
        [(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {"ALT": "1", "NOLIB": "1"}), (tmp_path, run, {})]
    )
    assert first.split() == [w for n in CASES for w in (n, "suspended")], first
    # Was: value 1 for alias, ifexpr and fromflag (json's, pickle's is 7), 6 for tryimp (json's 1).
    assert second.split() == [w for n in CASES for w in (n, "refused")], second
    # As recorded: replayed, nothing run again.
    assert third.split() == "alias value 1 ifexpr value 1 tryimp value 6 fromflag value 1".split(), third
    assert sorted((tmp_path / "count").read_text().split()) == sorted(CASES)
