"""What another loaded module of the user's does to a library at import
counts in the fingerprint of a step using that library only when it sets
the library's state for everyone (a seed, a locale, a default): the
statements of modules a process happens to have loaded (a test module, a
conftest, a plugin imported in one process and not the other) otherwise
made the fingerprint hang on which were loaded, and a resume in another
process was refused ("now uses global os state": the fault campaign's kill
and stop trials, whose test process had loaded a module setting
`os.environ[...]` at import)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from durable._fingerprint.fingerprint import fingerprint_function

STEP = """
import os
import random
import sys
import durable

@durable.step
def work(x):
    return os.path.join(str(x), str(random.randint(0, 9)), sys.platform)
"""


@pytest.mark.parametrize(
    ("other", "counts"),
    [
        ('import os\nos.environ["LIBSTATE_X"] = "1"\nos.environ.setdefault("LIBSTATE_Y", "2")', False),
        ("import sys\nimport os\nsys.path.insert(0, os.getcwd())\nos.makedirs('.', exist_ok=True)", False),
        ("from os import getcwd\nHERE = getcwd()", False),
        ("import sys\nsys.dont_write_bytecode = False", False),
        ("import random\nrandom.seed(3)", True),
        ("from random import seed\nseed(3)", True),
        ("import random\nrandom.setstate(random.getstate())", True),
    ],
)
def test_another_modules_import_counts_only_when_it_sets_the_librarys_state(
    load: Callable[[str, str], ModuleType], other: str, counts: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LIBSTATE_X", "LIBSTATE_Y"):  # restored after, whatever the module sets
        monkeypatch.setenv(name, "0")
    step = load("libstate_step", STEP).work.__durable_step__.fn
    alone = fingerprint_function(step).value
    load("libstate_other", other)
    beside = fingerprint_function(step).value
    assert (beside != alone) is counts
