"""A library's module imported inside `try:` (`try: import numpy as np` /
`except ImportError: np = None`) by a module another module reads whole
(`getattr(flows, sys.argv[1])()`, a command line's dispatch): it counted
by its attributes, numpy's `__all__` in another order in each hash seed.
A lambda reading `np` had another stamp in each process, and a resume was
refused ("helper flow74.<lambda> changed") with nothing edited. It counts
by the module's name now, as an `import numpy as np` of its own did; an
edit of the lambda is still refused, and anything else the block runs
(a call, a store into `np`, another binding) still counts (fail closed)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from durable._fingerprint.anybind import imports_alone
from tests.scripts import run_in

HELPERS = """try:
    import numpy as np
except ImportError:
    np = None

HELPERS = (lambda: np.float32(1.5),)
"""

STAMP = """import sys
import h74
from durable._core.code import function_stamp

print("stamp", function_stamp(getattr(h74, sys.argv[1])[0]))
"""

FLOW = """import os
import durable

{helpers}

@durable.step
def a(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("a\\n")
    return float(HELPERS[0]()) * x


@durable.step
def b(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("b\\n")
    return x + 1


@durable.workflow(run_id="r74")
def wf():
    x = a(2)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return [x, b(x)]
"""

RUN = """import sys
import durable
import flow74

try:
    print("value", getattr(flow74, sys.argv[1])())
except durable.Suspended:
    print("suspended")
except durable.DefinitionChangedError as e:
    print("refused", "flow74.<lambda>" in str(e))
"""


@pytest.mark.slow  # three processes
def test_a_lambdas_stamp_is_the_same_in_every_hash_seed(tmp_path: Path) -> None:
    (tmp_path / "h74.py").write_text(HELPERS)
    (tmp_path / "stamp74.py").write_text(STAMP)
    said = [run_in(tmp_path, "stamp74.py", "HELPERS", PYTHONHASHSEED=s).split() for s in ("1", "2", "3")]
    # Was: three stamps (numpy's attributes, in another order in each seed).
    assert said[0][0] == "stamp" and len(said[0]) == 2 and said.count(said[0]) == 3, said
    (tmp_path / "h74.py").write_text(HELPERS.replace("1.5", "2.5"))
    edited = run_in(tmp_path, "stamp74.py", "HELPERS", PYTHONHASHSEED="1").split()
    assert edited[0] == "stamp" and edited != said[0], (edited, said)


@pytest.mark.slow  # four processes
def test_a_resume_in_another_hash_seed_replays_and_an_edit_is_refused(tmp_path: Path) -> None:
    same, edited = tmp_path / "same", tmp_path / "edited"
    for folder in (same, edited):
        folder.mkdir()
        (folder / "flow74.py").write_text(FLOW.format(helpers=HELPERS))
        (folder / "run74.py").write_text(RUN)
        assert run_in(folder, "run74.py", "wf", STOP="1", PYTHONHASHSEED="1").split() == ["suspended"]
    (edited / "flow74.py").write_text(FLOW.format(helpers=HELPERS.replace("1.5", "2.5")))
    # Was: refused True (nothing edited) in another hash seed.
    assert run_in(same, "run74.py", "wf", PYTHONHASHSEED="2").split() == ["value", "[3.0,", "4.0]"]
    assert run_in(edited, "run74.py", "wf", PYTHONHASHSEED="2").split() == ["refused", "True"]
    # a ran once in each, in the first run; only the unchanged run's b ran on the resume.
    assert (same / "count").read_text().split() == ["a", "b"]
    assert (edited / "count").read_text().split() == ["a"]


IMPORTED = "try:\n    import numpy as np\nexcept ImportError:\n    {handler}\n"


@pytest.mark.parametrize(
    ("block", "alone"),
    [
        (IMPORTED.format(handler="np = None"), True),
        (IMPORTED.format(handler="import numpy_stub as np"), True),
        ("if TYPE_CHECKING:\n    import numpy as np\nX = 1", True),
        ("try:\n    import numpy as np\n    F = (lambda: np.zeros(1),)\nexcept ImportError:\n    pass", True),
        # What else the block runs may bind or change `np`: counted as before.
        (IMPORTED.format(handler="np = load()"), False),
        ("try:\n    import numpy as np\n    setup()\nexcept ImportError:\n    pass", False),
        ("try:\n    import numpy as np\n    np.k = 1\nexcept ImportError:\n    pass", False),
        ("try:\n    import numpy as np\nexcept ImportError as np:\n    pass", False),
        ("try:\n    import numpy as np\nexcept ImportError:\n    globals()['np'] = 1", False),
        ("try:\n    import numpy as np\n    F = (lambda x=f(): x,)\nexcept ImportError:\n    pass", False),
        ("for np in ():\n    import numpy as np", False),
    ],
)
def test_which_blocks_bind_a_name_by_imports_alone(block: str, alone: bool) -> None:
    stmt = ast.parse(block).body[0]
    assert imports_alone(stmt, "np") is alone
