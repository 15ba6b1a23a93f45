"""A step writing a global through a builtin method or an `operator`
function it hands the object to (`list.append(LOG, x)`, `dict.update(CFG,
...)`, `operator.setitem(CFG, "k", x)`, `operator.iadd(LOG, [x])`): it was
no write (review50's hand-off rule knew a few library writers, `heapq`,
`bisect`, `random.shuffle`, not these), so resumed in a new process the step
replayed without its write, and the step after it read what the import
left (value 0 for 5). As `LOG.append(x)` is, it is now a write: the resume
is a changed call. So is a part of a global, a class's or a module's
attribute handed to a helper of yours appending to its parameter
(`add(STATE["items"], x)`, `add(Box.items, x)`, `add(cfg.LOG, x)`): the
rule looked at bare names only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import said, write_read, write_then_read

pytestmark = pytest.mark.slow  # two processes

WRITES = {
    "list_append": ("[]", "list.append({g}, x)", "sum({g})"),
    "list_extend": ("[]", "list.extend({g}, [x])", "sum({g})"),
    "dict_update": ("{}", "dict.update({g}, k=x)", "{g}.get('k', 0)"),
    "dict_setitem": ("{}", "dict.__setitem__({g}, 'k', x)", "{g}.get('k', 0)"),
    "operator_setitem": ("{}", "operator.setitem({g}, 'k', x)", "{g}.get('k', 0)"),
    "operator_iadd": ("[]", "operator.iadd({g}, [x])", "sum({g})"),
    "set_add": ("set()", "set.add({g}, x)", "sum({g})"),
    # A part of a global handed to a helper of yours that appends to its parameter.
    "part_handed": ('{"items": []}', 'add({g}["items"], x)', 'sum({g}["items"])'),
    "class_handed": ('type("C", (), {"items": []})', "add({g}.items, x)", "sum({g}.items)"),
    "module_handed": (None, "add(cfg52.LOG, x)", "sum(cfg52.LOG)"),
}

HEAD = """import operator, os
import durable
import cfg52

def add(items, x):
    items.append(x)
"""



def test_a_global_handed_to_a_builtin_method_that_writes_it_is_written(tmp_path: Path) -> None:
    (tmp_path / "cfg52.py").write_text("LOG = []\n")
    modules = {  # a module each: what one writes is no other's change
        f"flow52h_{n}": write_read(HEAD + (f"\n{n.upper()} = {e}\n" if e else ""), n, w.format(g=n.upper()), r.format(g=n.upper()))
        for n, (e, w, r) in WRITES.items()
    }
    second = write_then_read(tmp_path, modules)
    # Was: value 0 for each (the import's empty list or dict, the write replayed away).
    assert second.split() == said(list(modules)), second
