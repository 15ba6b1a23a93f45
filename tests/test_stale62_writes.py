"""A step writing a global in ways review52's write rule did not see, so
that resumed in a new process it replayed without its write and the step
after it read what the import left (value 0 for 5):

- through a dunder, a method picked by `getattr` or through the object's
  type (`LOG.__iadd__([x])`, `getattr(LOG, "append")(x)`,
  `CFG.__setitem__("k", x)`, `type(LOG).append(LOG, x)`; `vars(NS)["k"]
  = x` was already a write: kept as a guard);
- a helper defined inside the step's body handed the global
  (`def add(xs, v): xs.append(v)`, then `add(LOG, x)`);
- a helper of yours shallow-copying its parameter then writing a list the
  copy shares (`c = dict(cfg); c["items"].append(v)`);
- a helper picked from a dict or by `getattr` (`OPS["add"](LOG, x)`), a
  dunder held bound to the global (`SET = CFG.__setitem__`);
- a local bound to the global, a part of it or a loop variable over it
  (`xs = LOG; xs.append(x)`, `for xs in LOG: xs.append(x)`), a conditional,
  `or` or `:=` expression (`(LOG or []).append(x)`), or the global handed
  to a helper inside a literal or a conditional (`add({"items": LOG}, x)`).

Each is now a write: the resume is a changed call. And a workflow body
whose source cannot be read (made by `exec` of generated text) filling a
global only inside a comprehension (`[LOG.append(v) for v in (x,)]`): the
rule read the body's own top-level names, so a resume given another `x`
replayed the sum the old one gave (value 2 for 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import said, write_read, write_then_read

pytestmark = pytest.mark.slow  # two processes

WRITES = {
    "dunder_iadd": ("[]", "{g}.__iadd__([x])", "sum({g})"),
    "getattr_append": ("[]", 'getattr({g}, "append")(x)', "sum({g})"),
    "dunder_setitem": ("{}", '{g}.__setitem__("k", x)', "{g}.get('k', 0)"),
    "vars_setitem": ("types.SimpleNamespace()", 'vars({g})["k"] = x', "getattr({g}, 'k', 0)"),
    "type_append": ("[]", "type({g}).append({g}, x)", "sum({g})"),
    "nested_helper": ("[]", "def add(xs, v):\n        xs.append(v)\n    add({g}, x)", "sum({g})"),
    "copied_dict": ('{"items": []}', "add_dict({g}, x)", 'sum({g}["items"])'),
    "copied_method": ('{"items": []}', "add_method({g}, x)", 'sum({g}["items"])'),
    "copied_star": ('{"items": []}', "add_star({g}, x)", 'sum({g}["items"])'),
    "copied_copy": ('{"items": []}', "add_copy({g}, x)", 'sum({g}["items"])'),
    # A helper of yours picked from a dict or by `getattr`; a dunder held bound to the global.
    "picked_helper": ('{"items": []}', 'OPS["add"]({g}, x)', 'sum({g}["items"])'),
    "getattr_helper": ('{"items": []}', 'getattr(Ops, "add")({g}, x)', 'sum({g}["items"])'),
    "held_dunder": ("{}\nSET = HELD_DUNDER.__setitem__", 'SET("k", x)', "{g}.get('k', 0)"),
    "held_in_dict": ('[]\nOPS_ADD = {"add": HELD_IN_DICT.append}', 'OPS_ADD["add"](x)', "sum({g})"),
    "held_in_namespace": ("[]\nNS_ADD = types.SimpleNamespace(add=HELD_IN_NAMESPACE.append)", "NS_ADD.add(x)", "sum({g})"),
    "x_copy_in_step": ('{"items": []}', 'c = dict({g})\n    c["items"].append(x)', 'sum({g}["items"])'),
    "x_alias": ("[]", "xs = {g}\n    xs.append(x)", "sum({g})"),
    "x_part": ('{"items": []}', 'xs = {g}["items"]\n    xs.append(x)', 'sum({g}["items"])'),
    "x_loop": ("[[]]", "for xs in {g}:\n        xs.append(x)", "sum({g}[0])"),
    "x_ifexp": ("[]", "({g} if x else []).append(x)", "sum({g})"),
    "x_boolop": ("[]", "({g} or []).append(x)", "sum({g})"),
    "x_ifexp_handed": ("[]", "add_dict({{'items': {g} if x else []}}, x)", "sum({g})"),
    "x_walrus": ("[]", "(xs := {g}).append(x)", "sum({g})"),
    "x_with_helper_ifexp": ("[]", "add_list({g} if x else None, x)", "sum({g})"),
}

COMP = '''import durable

LOG5 = []

@durable.step
def comp_r(x):
    return sum(LOG5) + x

# A workflow whose source cannot be read: made from generated text.
exec(compile("""
@durable.workflow(run_id="r5", version="1")
def comp(x, ready=False):
    [LOG5.append(v) for v in (x,)]
    out = comp_r(0)
    if not ready:
        durable.suspend("waiting")
    return out
""", "<generated>", "exec"))
'''

HEAD = '''import copy, os, types
import durable

def add_dict(cfg, v):
    c = dict(cfg)
    c["items"].append(v)

def add_method(cfg, v):
    c = cfg.copy()
    c["items"].append(v)

def add_star(cfg, v):
    c = {**cfg}
    c["items"].append(v)

def add_copy(cfg, v):
    c = copy.copy(cfg)
    items = c["items"]
    items.append(v)

def add_list(xs, v):
    xs.append(v)

OPS = {"add": add_dict}

class Ops:
    add = staticmethod(add_dict)

'''

# The workflow whose source cannot be read, resumed with another `x`.
COMP_RUN = """
import os
try:
    if os.environ.get("STOP"):
        flow62c.comp(2)
    else:
        print("comp", "value", flow62c.comp.resume("r5", x=3, ready=True).value)
except durable.Suspended:
    print("comp", "suspended")
except durable.DefinitionChangedError as e:
    print("comp", "refused" if "arguments changed" in str(e) else e)
"""


def test_a_global_written_through_a_dunder_getattr_nested_helper_or_shared_copy_is_written(tmp_path: Path) -> None:
    modules = {  # a module each: what one writes is no other's change
        f"flow62_{n}": write_read(f"{HEAD}{n.upper()} = {e}\n", n, w.format(g=n.upper()), r.format(g=n.upper()))
        for n, (e, w, r) in WRITES.items()
    }
    (tmp_path / "flow62c.py").write_text(COMP)
    second = write_then_read(tmp_path, modules, "import flow62c" + COMP_RUN, ["comp"])
    # Was: value 0 for each (the import's empty list or dict, the write replayed away), value 2 for comp.
    assert second.split() == said([*modules, "comp"]), second
