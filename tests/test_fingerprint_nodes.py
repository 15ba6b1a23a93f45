"""The fingerprint's own tree walk gives `ast.walk`'s nodes in its order
(and `children` those of `ast.iter_child_nodes`):
every hash and every "first statement found" of the fingerprint depends on
both, on every Python version (the trees differ between them)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable
from durable._fingerprint.nodes import children, walk

HERE = Path(__file__).parent
# The package, the tests' helpers (the syntax corpora among them) and `ast`
# itself, with `SHAPES`: every shape of node (its type, which fields hold a
# node, a list of what, or nothing) the 440 test modules have too, on 3.10
# to 3.13, in 40% of the files. `walk` and `children` read nothing but
# `_fields`, so a shape once seen is seen; the test modules, walked on every
# Python, were most of its time.
SOURCES = sorted(
    [
        *Path(durable.__file__).parent.rglob("*.py"),
        *(p for p in HERE.glob("*.py") if not p.name.startswith("test_")),
        Path(ast.__file__),
    ]
)
# The shapes of the test modules that no file above has.
SHAPES = """
class C(metaclass=M):
    pass
x[a::c]
while t:
    pass
else:
    pass
def f(*, a=1, b): ...
def g(*v, a=1, b): ...
def h(*v, a=1): ...
def i(a, *, b, **k): ...
def j(a=1, *v, b=2, **k): ...
"""


def same_walk(tree: ast.AST, each_node: bool = True) -> None:
    """The walk from `tree`, and (`each_node`) each of its nodes' children.
    (Lists of nodes compare by identity: a node has no `__eq__`.)"""
    nodes = list(ast.walk(tree))
    assert list(walk(tree)) == nodes
    for node in nodes if each_node else ():
        assert children(node) == list(ast.iter_child_nodes(node))


@pytest.fixture
def children_once(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[int, tuple[ast.AST, list[ast.AST]]]]:
    """`ast.iter_child_nodes`, which `ast.walk` calls, run once for each node
    of a file: `ast.walk` itself runs, over what the real function gave for
    each node (the trees are not changed). Called again for each comparison
    and each walk from a statement, it was most of the test's time, on every
    Python. The dict is cleared for each file (`seen.clear()`)."""
    real = ast.iter_child_nodes
    seen: dict[int, tuple[ast.AST, list[ast.AST]]] = {}

    def once(node: ast.AST) -> Iterator[ast.AST]:
        hit = seen.get(id(node))
        if hit is None or hit[0] is not node:
            hit = seen[id(node)] = (node, list(real(node)))
        return iter(hit[1])

    monkeypatch.setattr(ast, "iter_child_nodes", once)
    yield seen


@pytest.mark.parametrize("part", [0, 1, 2, 3])
def test_every_node_of_these_files_in_the_order_of_ast_walk(
    part: int, children_once: dict[int, tuple[ast.AST, list[ast.AST]]]
) -> None:
    files = SOURCES[part::4]
    assert len(files) > 50
    texts = [path.read_text(encoding="utf-8") for path in files] + ([SHAPES] if part == 0 else [])
    for text in texts:
        children_once.clear()
        try:
            tree = ast.parse(text)
        except SyntaxError:  # fp_corpus_312.py before 3.12
            continue
        same_walk(tree)
        # A walk from a statement, as most are. The children of its nodes were
        # compared just above (`children` reads nothing but the node): checked
        # again, they doubled the cost of the test, on every Python.
        for stmt in tree.body:
            same_walk(stmt, each_node=False)


def test_nodes_made_by_hand_with_fields_left_unset() -> None:
    call = ast.Call(func=ast.Name(id="f", ctx=ast.Load()), args=[ast.Constant(1)])  # no keywords
    partial = ast.BinOp(left=ast.Constant(1), op=ast.Add())  # no right
    module = ast.Module(body=[ast.Expr(call), ast.Expr(partial)], type_ignores=[])
    same_walk(module)
    assert [type(n).__name__ for n in walk(module)][:5] == ["Module", "Expr", "Expr", "Call", "BinOp"]


def test_lists_of_names_and_of_operators() -> None:
    tree = ast.parse("global a, b\nx = 1 < 2 <= 3\n", mode="exec")
    same_walk(tree)
    same_walk(ast.parse("match p:\n    case Point(x=0, y=1): pass\n"))
