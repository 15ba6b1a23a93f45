"""The small files a global made from outside the source was read from,
by their bytes: `PROMPT = env.get_template("p.j2")` (a template that names
its file in `filename`), `PROMPT = jinja2.Template(Path("p.j2").read_text())`
or `(Path(__file__).parent / "p.j2")` (a file its statement names). Such
an object's attributes are the same whatever the file said (a template
keeps no trace of its text), so counted by them alone a prompt edited
since was served the output of the old one.

Pure standard library."""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from collections.abc import Iterator

from .bindings import binding_statements
from .imports import user_class
from .nodes import walk
from .outside import imported_from

_SMALL = 1 << 20  # a template, a config: not a data file hashed at every run's start
_MODES = frozenset("rwbxatcnfsu+U")  # `open`'s modes, `dbm.open`'s flags
_WRITES = frozenset({"write", "write_text", "write_bytes", "dump", "mkdir", "touch", "unlink", "remove"})


def with_file(obj: object, toks: list[str] | None) -> list[str] | None:
    """`toks` and, for a library's object loaded from a file it names in
    `filename` (not one opened to be written: `ZipFile(path, "w")`), that
    file's bytes."""
    held = vars(obj) if hasattr(obj, "__dict__") and not user_class(type(obj)) else {}
    name, mode = held.get("filename"), held.get("mode")
    if not isinstance(name, str) or (isinstance(mode, str) and set(mode) & set("wax+")):
        return toks
    digest = _digest(name)
    return toks if digest is None else [*(toks or []), f"<file:{digest}>"]


def named_files(stmts: tuple[ast.AST, ...], module: str | None, depth: int = 0) -> list[str]:
    """The bytes of each small file a string of `stmts` names, from the
    working folder or the folder of their module's file (`module`, by
    name); through `from prompts import PROMPT` of a module of the user's,
    those its statements name; none of a statement that writes (`open(p,
    "w")`, `.write_text(...)`): the run changes that file."""
    namespace = vars(sys.modules[module]) if module in sys.modules else {}
    home = namespace.get("__file__")
    found = []
    for stmt in stmts:
        for other, attr in imported_from(stmt, namespace, None) if depth < 2 else ():
            theirs = tuple(binding_statements(attr, vars(other)) or ())
            found += named_files(theirs, other.__name__, depth + 1)
        strings = [n.value for n in walk(stmt) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if any(_mode(s) for s in strings) or any(_writer(n) for n in walk(stmt)):
            continue
        strings += [os.path.join(*parts) for n in walk(stmt) if len(parts := _joined(n)) > 1]
        for text in dict.fromkeys(s for s in strings if 0 < len(s) < 1024 and "\n" not in s):
            digest = next((d for path in _places(text, home) if (d := _digest(path))), None)
            found += [] if digest is None else [f"<file:{text}:{digest}>"]
    return found


def _joined(node: ast.AST) -> list[str]:
    """The strings a path is joined of, in order: `HERE / "pkg" / "p.j2"`,
    `os.path.join(HERE, "pkg", "p.j2")`."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "join":
        return [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    parts: list[str] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        if not (isinstance(node.right, ast.Constant) and isinstance(node.right.value, str)):
            break
        parts.insert(0, node.right.value)
        node = node.left
    return parts


def _mode(text: str) -> bool:
    return len(text) <= 3 and set(text) <= _MODES and bool(set(text) & set("waxcn+"))


def _writer(node: ast.AST) -> bool:
    """A call that writes a file, or opens a store the run may write
    (`shelve.open(path)`, `dbm.open(path)`, `sqlite3.connect(path)`)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    store = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") in ("shelve", "dbm")
    return name in _WRITES or name == "connect" or store


def _places(text: str, home: object) -> Iterator[str]:
    yield text
    if isinstance(home, str) and not os.path.isabs(text):
        yield os.path.join(os.path.dirname(os.path.abspath(home)), text)


def _digest(path: str) -> str | None:
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _SMALL:
            return None
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except (OSError, ValueError):  # a name no file can have (a NUL in it)
        return None
