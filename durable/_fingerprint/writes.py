"""The writes a module's text makes through a name chain, for
`elsewhere`: each statement that sets or deletes an attribute (`x.K = 1`,
`del x.K`, `setattr(x, "K", 1)`), sets an item (`x[k] = 1`), or calls a
method that may change its object (`x.append(1)`; not one that only
looks, `x.get(k)`), at any depth of a module-level statement; each
call through a name chain made as a module-level statement runs
(`settings.set_lr(lr)` in a script's loop); and each name a call at any
depth is given (`configure(settings, 3)`, `fill(VALUES)`, also in the
body of a `main()` the script calls): it may change any of its names, in
the body of the module's function it calls too.

Pure standard library."""

from __future__ import annotations

import ast
from functools import lru_cache

from .inplace import LOOKS, READERS, passed, run_now
from .nodes import walk
from .source import parse

# The attribute of a write whose name is not a string in the text
# (`setattr(settings, name, value)`): it may set any name.
ANY = "?"
# The root of the path of a module taken out of `sys.modules` or
# `importlib.import_module(...)`, followed by its name when the text
# spells it (`sys.modules["settings"]`), else by nothing: any module.
MODULE_ROOT = "sys.modules[]"
_IMPORTERS = (("importlib", "import_module"), ("import_module",))
# The head of the last name of a path called as its statement runs
# (`settings.set_lr(lr)` in a script's loop: ("settings", "()set_lr")),
# or the tail of a function called by its name (`configure(k)`: ("configure", "()")).
CALLED = "()"
# The tail of the path of a name a module-level call is given: any of its
# names, as `ANY`, when it holds a module or an object (a call cannot
# change a string or number it is given).
GIVEN = "?given"
# The tail of the path of an object changed in place (`x.K.append(1)`,
# `x.K[k] = 1`), not an attribute set on it: a string or path there
# changes nothing (`t.TEMPLATE.replace(a, b)` in a test module).
IN_PLACE = "?in"

# The tail of the path of a name handed to a call that only reads it and
# gives back nothing of it (`_looks_at`), unless it is an iterator it
# consumes: nothing when it holds a list, dict, set, tuple or string. Not a
# copy or a pick (`dict(CFG)`, `sorted(ROWS)`, `max(ROWS)`): what it gives
# shares the parts another statement may change (`dict(CFG)["items"].append(1)`).
LOOKED = "?looked"
_CONSUMERS = frozenset({"any", "all"})
_SERIALIZERS = frozenset({
    ("json", "dumps"), ("json", "dump"), ("pprint", "pprint"), ("pprint", "pformat"),
    ("copy", "deepcopy"),
})  # fmt: skip

Path = tuple[str, ...]


@lru_cache(maxsize=1024)
def writes_of(text: str) -> tuple[tuple[Path, ast.AST], ...]:
    """(path written through, module-level statement) for each write in
    `text`: the object written to, then the attribute set, if any. Not
    through `self` or `cls`: an object's own. Kept by text, so that a
    module's text is parsed and walked once, whatever changes around it."""
    tree = parse(text).tree
    body = tree.body if tree else []
    defs: dict[str, ast.AST] = {
        d.name: d for d in body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found: list[tuple[Path, ast.AST]] = []
    for unit in body:
        nodes = list(walk(unit))
        paths = [_written(node) for node in nodes]
        paths += [_called(node) for node in run_now(unit)]
        found += [(path, unit) for path in paths if path and path[0] not in ("self", "cls")]
        # A call in a function's body hands its names over as well, when the
        # function runs (`main()` calling `configure(settings)`): counted
        # whether or not it runs, fail closed, as a write in a body is.
        found += [given for node in nodes for given in _given(node, unit, defs)]
    return tuple(found)


def _given(node: ast.AST, unit: ast.AST, defs: dict[str, ast.AST]) -> list[tuple[Path, ast.AST]]:
    """The names a module-level call is given (`configure(settings, 3)`),
    each with the statement, and with the function of the module it calls:
    what `def configure(s): s.RATES = [3]` sets is in its body."""
    if not isinstance(node, ast.Call):
        return []
    names = passed(node, READERS)
    func = defs.get(node.func.id) if isinstance(node.func, ast.Name) else None
    tail = LOOKED if _looks_at(node.func) else GIVEN
    return [((n, tail), u) for n in names for u in (unit, func) if u is not None]


def _looks_at(func: ast.expr) -> bool:
    """A call that reads what it is handed, consuming it if it is an
    iterator, and gives back a new value: `any`, `all`, a serializer
    (`json.dumps(CFG)`, `pprint.pprint(CFG)`, a deep copy) or a string's `join`."""
    if isinstance(func, ast.Name):
        return func.id in _CONSUMERS
    if not isinstance(func, ast.Attribute):
        return False
    if isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
        return func.attr == "join"  # `", ".join(NAMES)`
    return isinstance(func.value, ast.Name) and (func.value.id, func.attr) in _SERIALIZERS


def _called(node: ast.AST) -> Path | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        head = _chain(node.func.value)
        return (*head, CALLED + node.func.attr) if head else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):  # `configure(k)` imported
        return (node.func.id, CALLED)
    return None


def _written(node: ast.AST) -> Path | None:
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
        head = _chain(node.value)
        return (*head, node.attr) if head else None
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return _in_place(_chain(node.value))
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and len(node.args) >= 2:
        head, key = _chain(node.args[0]), node.args[1]
        return (*head, _text(key) or ANY) if head else None
    if isinstance(func, ast.Attribute) and func.attr not in LOOKS:
        return _in_place(_chain(func.value))
    return None


def _in_place(path: Path | None) -> Path | None:
    return (*path, IN_PLACE) if path else None


def _chain(node: ast.AST) -> Path | None:
    """`a.b.c` as ("a", "b", "c"); `sys.modules[k]`, `import_module(k)` as
    a module named k (`MODULE_ROOT`), or any when k is no string in the
    text (`__name__`: the writer's own)."""
    if isinstance(node, ast.Subscript) and _chain(node.value) == ("sys", "modules"):
        return (MODULE_ROOT + _key(node.slice),)
    if isinstance(node, ast.Call) and _chain(node.func) in _IMPORTERS and node.args:
        return (MODULE_ROOT + _key(node.args[0]),)  # `import_module("settings")`
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        head = _chain(node.value)
        return (*head, node.attr) if head else None
    return None


def _key(node: ast.AST) -> str:
    if isinstance(node, ast.Name) and node.id == "__name__":
        return "__name__"
    return _text(node) or ""


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
