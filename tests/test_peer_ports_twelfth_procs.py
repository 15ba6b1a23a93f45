"""The twelfth round of the peers' own test cases (see
tests/test_peer_ports_twelfth.py), those whose peer test crosses a process
boundary: DBOS Transact's test_recovery_workflow (tests/test_dbos.py), the
workflow given an object whose class pickles a set it holds as a list
(`__getstate__`), so that the same value has another digest in each process
(string hashing differs per process). Durable cannot tell such a value the
same (fail closed: the resume is refused); the refusal says why instead of
blaming an earlier step that does not exist. Real processes; executions are
counted by the step bodies themselves, in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_in, suspending

TAGS = """
import os
import durable

class Tags:
    def __init__(self, names):
        self.names = set(names)

    def __getstate__(self):
        return {"names": LISTED}

@durable.step
def count(tags):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("count\\n")
    return len(tags.names)
""" + suspending("count(tags)", params="tags", given='Tags(["alpha", "beta", "gamma", "delta", "epsilon"])')


@pytest.mark.slow
def test_dbos_recovery_with_an_argument_pickled_in_another_order_in_each_process(
    tmp_path: Path,
) -> None:
    """The run suspended under one hash seed and recovered under another:
    refused (the step executed once), the refusal naming `Tags.__getstate__`
    and what to do. Seen failing: it said only that an earlier step
    probably changed the object in place (there is none). With the state
    sorted, the recovery replays 5 without executing the step again."""
    (tmp_path / "flow.py").write_text(TAGS.replace("LISTED", "list(self.names)"))
    assert "suspended" in run_in(tmp_path, "flow.py", STOP="1", PYTHONHASHSEED="1")
    out = run_in(tmp_path, "flow.py", PYTHONHASHSEED="2")
    assert "DefinitionChangedError" in out and "value 5" not in out
    assert "Tags.__getstate__ may give the same value's state in another order" in out
    assert "return it sorted" in out
    (tmp_path / "flow.py").write_text(TAGS.replace("LISTED", "sorted(self.names)"))
    assert "suspended" in run_in(tmp_path, "flow.py", STOP="1", PYTHONHASHSEED="1", **_FRESH)
    assert "value 5" in run_in(tmp_path, "flow.py", PYTHONHASHSEED="2", **_FRESH)
    assert (tmp_path / "count").read_text().split() == ["count", "count"]


_FRESH = {"DURABLE_STORE": "fresh"}
