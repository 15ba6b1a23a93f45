"""The hidden generator of random numbers behind a library's module-level
functions (`random.random()`, `random.seed(x)`, `np.random.rand()`): a
global state the module's name stands for. A step seeding it, or drawing
from it in a program that seeds it, changes what the next draw gives, and
a replay does not draw again: resumed in a new process, the next step drew
from an unseeded generator, or drew the first value of the seeded one (844
where an uninterrupted run drew 758). A program that never seeds it draws
anew in every run anyway: no value of it can be stale, and its draws are
no writes (a workflow using `random` unseeded resumes as before).

Pure standard library (numpy told by its names: durable never imports it)."""

from __future__ import annotations

import ast
import os
import random
import sys
import types
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .loaded import Users, loaded_state
from .nodes import walk
from .source import source_of


def hidden_write(call: ast.Call, globs: Mapping[str, Any]) -> str | None:
    """The global naming the library whose hidden generator `call` seeds, or
    draws from when the module's code seeds that generator anywhere (at
    module level, in a step, in the workflow): `random` of `random.seed(x)`,
    `np` of `np.random.rand()`. None for another call."""
    head, fn, dotted = _chain(call.func, globs)
    generator = _generator(fn, dotted)
    if head is None or generator is None:
        return None
    if dotted.rpartition(".")[2] == "seed":
        return head
    return head if _seeded(globs, generator) else None


def _chain(node: ast.AST, globs: Mapping[str, Any]) -> tuple[str | None, object, str]:
    """The global a dotted name starts from, what it names through modules
    (`np.random.rand`), read without running code, and its dotted name from
    the module on (`numpy.random.rand`, also before `numpy.random` is loaded)."""
    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in globs:
        return None, None, ""
    value = globs[node.id]
    dotted = value.__name__ if isinstance(value, (types.ModuleType, *_METHODS)) else ""  # `seed` of `from random import seed`
    for attr in reversed(attrs):
        dotted = f"{dotted}.{attr}"
        value = vars(value).get(attr, sys.modules.get(dotted)) if isinstance(value, types.ModuleType) else None
    return node.id, value, str(dotted)


def _generator(fn: object, dotted: str) -> str | None:
    """`random` or `numpy.random` when `fn` draws from or seeds their hidden
    generator (`random.randint`, `np.random.rand`, `np.random.seed`)."""
    owner = getattr(fn, "__self__", None)
    if owner is not None and owner is getattr(sys.modules.get("random"), "_inst", random):
        return "random"
    module, _, name = dotted.rpartition(".")
    return "numpy.random" if module in _NUMPY and name not in _NUMPY_MAKERS and not name.startswith("_") else None


_METHODS = (types.MethodType, types.BuiltinMethodType)
# What numpy's global functions draw from; what makes a generator of its own draws from no hidden one.
_NUMPY = frozenset({"numpy.random", "numpy.random.mtrand"})
_NUMPY_MAKERS = frozenset(
    "default_rng Generator RandomState SeedSequence BitGenerator MT19937 PCG64 PCG64DXSM Philox SFC64 get_state".split()
)


def _seeded(globs: Mapping[str, Any], generator: str) -> bool:
    """Whether the module's text, or that of another module of the user's
    loaded (`config.py` doing `random.seed(SEED)` at import, a script
    seeding before it calls the workflow), seeds `generator`: one generator
    for the whole process, whoever seeds it."""
    return _seeds(globs, generator) or _seeded_elsewhere(loaded_state(), generator)


def _seeded_elsewhere(users: Users, generator: str) -> bool:
    """Once per set of the user's modules loaded (`loaded_state`) and generator."""
    kept = _ELSEWHERE.get(generator)
    if kept is None or kept[0] is not users:
        kept = _ELSEWHERE[generator] = (users, any(_seeds(vars(m), generator) for m in users[1]))
    return kept[1]


_ELSEWHERE: dict[str, tuple[Users, bool]] = {}


def _seeds(globs: Mapping[str, Any], generator: str) -> bool:
    """Whether the module's text calls `seed` of `generator`: by any name
    (`random.seed`, `seed` of `from random import seed`, `np.random.seed`)."""
    filename = globs.get("__file__")
    cells = globs.get("_ih")  # a notebook's cells, run so far
    if isinstance(filename, str) and source_of(filename, globs).tree is not None:
        texts = [source_of(filename, globs).text]
    elif isinstance(filename, str) and _empty(filename):  # an empty `__init__.py`: its text is there, and seeds nothing
        texts = []
    elif isinstance(cells, list):
        texts = [c for c in cells if isinstance(c, str)]
    else:  # no text to read (`python -c`): seeded, as far as anyone can tell
        return True
    return any(
        _generator(fn, dotted) == generator and dotted.rpartition(".")[2] == "seed"
        for text in texts
        for node in _seed_calls(text)
        for _, fn, dotted in [_chain(node, globs)]
    )


def _empty(filename: str) -> bool:
    try:
        return os.stat(filename).st_size == 0
    except (OSError, ValueError):  # no file (`<string>`, a zip's member): no text to tell by
        return False


@lru_cache(maxsize=256)
def _seed_calls(text: str) -> tuple[ast.AST, ...]:
    """What the calls of something named `seed` in the text call."""
    if "seed" not in text:
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):  # a cell of IPython's magics
        return ()
    return tuple(
        n.func for n in walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == "seed"
    )  # fmt: skip


def hidden_state(value: object) -> object | None:
    """What the hidden generator a library's module or one of its functions
    stands for (`random`, `np`, `np.random`, `rnd` of `from random import
    random as rnd`: the names `hidden_write` gives) holds now, for a step's
    record to hold as its body left it; None for another value."""
    generator = stands_for(value)
    if generator == "random":
        return random.getstate()
    mtrand = sys.modules.get("numpy.random.mtrand") if generator == "numpy.random" else None
    made = getattr(mtrand, "_rand", None)
    return None if made is None else made.get_state()


def same_generator(names: frozenset[str], globs: Mapping[str, Any]) -> frozenset[str]:
    """The other globals standing for the hidden generator one of `names`
    does (`random` and `rnd` of `from random import random as rnd`): a draw
    through either changes what the other gives next."""
    held = {g for n in names if (g := stands_for(globs.get(n))) is not None}
    return frozenset(k for k, v in dict(globs).items() if held and stands_for(v) in held) - names


def stands_for(value: object) -> str | None:
    """`random` or `numpy.random` when `value` is that library's module (or
    numpy's) or a function of its hidden generator (`random.random`,
    `np.random.rand`: bound methods of it); None for another value."""
    if isinstance(value, types.ModuleType):
        home = value.__name__.partition(".")[0]
        return "random" if value.__name__ == "random" else "numpy.random" if home == "numpy" else None
    owner = getattr(value, "__self__", None) if isinstance(value, _METHODS) else None
    if owner is None:
        return None
    if owner is getattr(sys.modules.get("random"), "_inst", random):
        return "random"
    return "numpy.random" if owner is getattr(sys.modules.get("numpy.random.mtrand"), "_rand", random) else None


def called_again(tree: ast.AST, name: str, globs: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether the step `name` of the module whose tree is `tree` (in a
    notebook, of the cells run so far) may be called more than once in a
    run: named more than once (`name` or `x.name`; where the module names it
    nowhere, in the user's modules loaded: `from steps import a` in the
    workflow's), or once but not as a call of a workflow's own statements
    outside a loop (`loop_over(name, items)`, in a `for`, in a helper), or
    not at all (none can tell); called once by another step's statements,
    as often as that step is. A step drawing from a seeded hidden
    generator and called again reads what its call before left: its replay
    in a new process leaves the generator where the next call draws the
    first value again."""
    found = _places(tree, name, globs)
    if len(found) != 1 or not found[0]:
        return True
    return _again_from(tree, name, globs, found[0], depth)


def _places(tree: ast.AST, name: str, globs: Mapping[str, Any]) -> list[tuple[ast.AST, ...]]:
    """Where the module (a notebook's cells run so far), or else the user's
    other modules loaded (`from steps import a`), name `name`."""
    cells = globs.get("_ih")
    if isinstance(cells, list):
        trees = [t for c in dict.fromkeys(c for c in cells if isinstance(c, str)) if (t := _parsed(c)) is not None]
    else:
        trees = [tree]
    found = [above for t in trees for above in _named(t, name)]
    if not found and not isinstance(cells, list):
        trees = [t for m in loaded_state()[1] if vars(m) is not globs and (t := _tree(m)) is not None]
        found = [above for t in trees for above in _named(t, name)]
    return found


def _again_from(tree: ast.AST, name: str, globs: Mapping[str, Any], above: tuple[ast.AST, ...], depth: int) -> bool:
    home = next((n for n in reversed(above) if isinstance(n, _SCOPES)), None)
    if not isinstance(home, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    inside = above[above.index(home) + 1 :]
    call = inside[-1] if inside else None  # what names it: called, not handed on (`loop_over(name, xs)`)
    func = call.func if isinstance(call, ast.Call) else None
    if getattr(func, "id", getattr(func, "attr", None)) != name or any(isinstance(n, _LOOPS) for n in inside):
        return True
    if depth > 8:
        return True
    if _decorated(home, "workflow"):
        return _child_again(tree, home.name, globs, depth + 1)
    return not _decorated(home, "step") or called_again(tree, home.name, globs, depth + 1)


def _child_again(tree: ast.AST, name: str, globs: Mapping[str, Any], depth: int) -> bool:
    """Whether the workflow `name` may run more than once as a child within
    one run of another: its runs share the process's state, and a replayed
    first child leaves what the second reads as the import made it
    (`child(1); child(2)`, its step appending to a list: `[2]` for `[1,
    2]`). Named only outside any function (a script's own start, `wf()` at
    module level), it starts runs of its own: once each."""
    found = [a for a in _places(tree, name, globs) if any(isinstance(n, _SCOPES) for n in a)]
    if not found:
        return False
    return len(found) != 1 or _again_from(tree, name, globs, found[0], depth)


@lru_cache(maxsize=1024)
def _named(tree: ast.AST, name: str) -> tuple[tuple[ast.AST, ...], ...]:
    """Where `tree` names `name`: the nodes above each place, outermost first."""
    found: list[tuple[ast.AST, ...]] = []
    todo: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, ())]
    while todo:
        node, above = todo.pop()
        if (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name):
            found.append(above)
        todo.extend((child, (*above, node)) for child in ast.iter_child_nodes(node))
    return tuple(found)


def _tree(module: types.ModuleType) -> ast.AST | None:
    filename = getattr(module, "__file__", None)
    return source_of(filename, vars(module)).tree if isinstance(filename, str) else None


@lru_cache(maxsize=256)
def _parsed(text: str) -> ast.AST | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):  # a cell of IPython's magics
        return None


def _decorated(fn: ast.FunctionDef | ast.AsyncFunctionDef, kind: str) -> bool:
    return any(kind in ast.unparse(d) for d in fn.decorator_list)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.comprehension, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
