"""The modules of the user's a function may import by a name it builds at
run time with no package to name: `import_module("handlers_" + kind)`,
`f"handlers_{kind}"`, `"%s_handler" % kind`, `"{}_handler".format(kind)`,
`PREFIX + kind` (a global string). `packagefiles` counts the package a
name built under one names (`"plugins." + kind`); here no package holds
the candidates, and neither the code's constants (`"handlers_"`) nor its
arguments (`"csv"`) name a module: the handler edited, the resume
replayed the old answer. Each such name is a pattern (`handlers_*`), and
every module file of the user's folders on `sys.path` it matches counts
by its text, imported or not, as a package's files do. A name that
cannot be told (`import_module(os.environ["HANDLER"])`, `"".join(parts)`
of a file's lines) may be any module: every module file of those folders
counts, so the call is changed only when one of the user's modules is;
but a variable of the environment read by a constant key names the one
module it names as the call is made, which counts alone (review63).

Pure standard library."""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import os
import re
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

from .analysis import SAID
from .imports import import_user_module
from .modfiles import UNTOLD
from .nodes import walk
from .packagefiles import package_digest
from .source import find_definitions, source_of
from .userfiles import is_user_file

# Names of the calls that look a module up by its first argument.
_LOOKUPS = frozenset({"import_module", "__import__", "find_spec", "resolve_name", "locate", "import_string"})
_FILES = 1024  # past this many files the rest would go uncounted: changed (`UNTOLD`)
_ANY = "*"
_SAID = 512  # modules named beside a pattern's digest for a refusal: past it, none


def built_parts(code: types.CodeType, globs: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """("built-names:PATTERN", the digest of the texts of the user's module
    files it matches) for each name the function builds at run time and
    looks up (`_patterns`); a pattern under a package (`plugins.fast_*`):
    that package's files (`package_digest`)."""
    found: dict[str, str] = {}
    said: dict[str, str] = {}
    for pattern in sorted(_patterns(code, globs)):
        head, _, _ = pattern.partition(_ANY)
        if "." in head:  # under a package: all its files, as `packagefiles` counts them
            module = import_user_module(head.rpartition(".")[0])
            digest = package_digest(module) if isinstance(module, types.ModuleType) else None
            found[pattern] = digest or UNTOLD
        else:
            found[pattern], each = _top_files(pattern.partition(".")[0])
            if each and len(each) <= _SAID:  # for a refusal to name the module that changed, never hashed
                said[f"{SAID}built-names:{pattern}"] = json.dumps(each, sort_keys=True)
    return (*((f"built-names:{p}", d) for p, d in found.items()), *said.items())


def changed_modules(old: str | None, new: str | None) -> str:
    """" (handlers_csv changed)": the modules of the user's whose text differs
    between two `said:built-names:` digests; "" when not told."""
    try:
        before, after = json.loads(old or "{}"), json.loads(new or "{}")
    except ValueError:
        return ""
    if not isinstance(before, dict) or not isinstance(after, dict) or not before or not after:
        return ""
    named = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if not named:
        return ""
    shown = ", ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
    return f" ({shown} changed)"


def _patterns(code: types.CodeType, globs: Mapping[str, Any]) -> set[str]:
    """The patterns of the names given to a lookup (`_LOOKUPS`) that the
    function builds: its constant parts kept, the rest `*`; `*` alone for
    a name that cannot be told. A parameter, a constant or a global
    string is no pattern: the arguments, the code's constants and the data
    it reads tell those (`named`, `lookups`)."""
    nodes = find_definitions(code, source_of(code.co_filename, globs))
    if len(nodes) != 1 or not isinstance(nodes[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return {_ANY}  # its source unread: any module (fail closed)
    top = nodes[0]
    a = top.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}
    bound: dict[str, list[ast.expr]] = {}
    for node in walk(top):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name):
            bound.setdefault(node.target.id, []).append(node.value or ast.Constant(""))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.withitem)):  # `for m in mods`: as `mods`
            names, source = (node.optional_vars, node.context_expr) if isinstance(node, ast.withitem) else (node.target, node.iter)
            for name in walk(names) if names is not None else ():
                if isinstance(name, ast.Name):
                    bound.setdefault(name.id, []).append(source)
    found: set[str] = set()
    for node in walk(top):
        if isinstance(node, ast.Call) and node.args and _called(node.func) in _LOOKUPS:
            found |= _shapes(node.args[0], params, bound, globs, 0)
    return {p for p in found if p and all(c.isalnum() or c in "_.*" for c in p)}


def named_elsewhere(code: types.CodeType, globs: Mapping[str, Any]) -> tuple[types.ModuleType, ...] | None:
    """The modules of the user's the function's lookups name as the call is
    made, when each names another module than its own (nor a package above
    or below it): `import_module(os.environ["PLUGIN_A"])` (`_environment`),
    `import_module("plugins")`. Those count whole (what their functions
    reach too: a plugin calling back into the step's module), and the
    step's own module is not read whole for them: a step of the module
    reading `PLUGIN_B` is no part of this one's call. None for any other
    way to a module (`sys.modules`, `globals()`, a frame, a lookup handed
    on: `map(import_module, names)`), a name not told now, or a module not
    imported for it (`import_user_module`: doing work at import, or none)."""
    nodes = find_definitions(code, source_of(code.co_filename, globs))
    if len(nodes) != 1:
        return None
    own = str(globs.get("__name__") or "")
    calls = {id(c.func): c for c in walk(nodes[0]) if isinstance(c, ast.Call)}
    found: list[types.ModuleType] = []
    for node in walk(nodes[0]):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if name not in _REACH_MODULES:
            continue
        call = calls.get(id(node))
        if name not in ("import_module", "__import__") or call is None or len(call.args) != 1 or call.keywords:
            return None
        first = call.args[0]
        named = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else _environment(first)
        if not named or _ANY in named or named.startswith(".") or _related(named, own):
            return None
        module = import_user_module(named)
        if not isinstance(module, types.ModuleType):
            return None
        found.append(module)
    return tuple(found) or None


# Names by which code reaches a module's namespace without naming its globals (`lookups`).
_REACH_MODULES = _LOOKUPS | frozenset({
    "modules", "getmodule", "currentframe", "_getframe", "f_globals", "__globals__", "globals", "vars", "eval",
    "exec", "locals", "get_method", "get_class", "get_object", "instantiate", "load_object",
})  # fmt: skip


def _related(a: str, b: str) -> bool:
    """Whether one of two module names is the other or a package above it."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".") or "__main__" in (a, b)


def _called(func: ast.AST) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _shapes(node: ast.AST, params: set[str], bound: dict[str, list[ast.expr]], globs: Mapping[str, Any], depth: int) -> set[str]:
    """The patterns of the names `node`, given to a lookup, may be: ""
    where it is told elsewhere (a constant, a parameter or what it holds,
    a global's data), `*` where it cannot be told."""
    if depth > 8:
        return {_ANY}
    if isinstance(node, ast.Constant):
        return {""}
    if (env := _environment(node)) is not None:
        return {env}
    if isinstance(node, ast.Name):
        if node.id in bound:
            return {s for v in bound[node.id] for s in _shapes(v, params, bound, globs, depth + 1)}
        return {""} if node.id in params or isinstance(globs.get(node.id), (str, dict, list, tuple)) else {_ANY}
    if isinstance(node, (ast.Subscript, ast.Attribute)):  # `cfg["module"]`, `args.tool`: what holds it tells
        root: ast.AST = node
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        return _shapes(root, params, bound, globs, depth + 1) if isinstance(root, ast.Name) else {_ANY}
    if _dotted_parameters(node, params):
        return {""}
    return _pattern(node, bound, globs, depth)


def _environment(node: ast.AST) -> str | None:
    """The module a variable of the environment names now, for a name read
    from it by a constant key (`os.environ["PLUGIN"]`, `os.environ.get(
    "PLUGIN", "default")`, `os.getenv("PLUGIN")`): that name alone is the
    pattern, so its module's text counts and another module named there
    is another call (the name joins the pattern's key); `*` where it names
    none (unset: any module, fail closed). None for any other node."""
    key, default = None, None
    if isinstance(node, ast.Subscript) and _environ(node.value):
        key = node.slice
    elif isinstance(node, ast.Call) and not node.keywords and 1 <= len(node.args) <= 2:
        func = node.func
        if isinstance(func, ast.Attribute) and (
            (func.attr == "get" and _environ(func.value))
            or (func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os")
        ):
            key, default = node.args[0], node.args[1] if len(node.args) == 2 else None
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    value = os.environ.get(key.value)
    if value is None and isinstance(default, ast.Constant) and isinstance(default.value, str):
        value = default.value
    named = value is not None and value != "" and all(p.isidentifier() for p in value.split("."))
    return value if named and value is not None else _ANY


def _environ(node: ast.AST) -> bool:
    """`os.environ`."""
    return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"


def _dotted_parameters(node: ast.AST, params: set[str]) -> bool:
    """Whether `node` joins only parameters with dots (`f"{package}.{node}"`,
    `pkg + "." + name`): the arguments' strings name the module whole
    (`givennames` counts dotted names the arguments make)."""
    parts = _parts(node)
    if not parts:
        return False
    for part in parts:
        value = part.value if isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None else part
        if isinstance(value, str) and value.strip(".") == "":
            continue
        if not (isinstance(value, ast.Name) and value.id in params):
            return False
    return True


def _pattern(node: ast.AST, bound: dict[str, list[ast.expr]], globs: Mapping[str, Any], depth: int) -> set[str]:
    """The patterns of the text `node` gives: a constant's, a global
    string's (`PREFIX`), a local's by what binds it, a name built of those
    (`_parts`); `*` for any other piece."""
    if depth > 8:
        return {_ANY}
    if isinstance(node, ast.Name) and node.id in bound:
        return {p for v in bound[node.id] for p in _pattern(v, bound, globs, depth + 1)}
    if isinstance(node, ast.Name) and isinstance(value := globs.get(node.id), str):
        return {value}
    parts = _parts(node)
    if parts is None:
        return {_ANY}  # a call's result, a file's text, a parameter: any text
    shapes = {""}
    for part in parts:
        texts = {part} if isinstance(part, str) else _pattern(part, bound, globs, depth + 1) if isinstance(part, ast.AST) else {_ANY}
        shapes = {_squeeze(s + t) for s in shapes for t in texts}
    return shapes


def _parts(node: ast.AST) -> list[object] | None:
    """The pieces of a name built from strings, constants as text: `+`,
    an f-string, `%` and `.format` of a constant template; None for
    anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*(_parts(node.left) or [node.left]), *(_parts(node.right) or [node.right])]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value if isinstance(v, ast.Constant) else v for v in node.values]
    template = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
        template = node.left.value
    elif isinstance(node, ast.Call) and _called(node.func) == "format" and isinstance(node.func, ast.Attribute):
        inner = node.func.value
        template = inner.value if isinstance(inner, ast.Constant) else None
    if not isinstance(template, str):
        return None
    pieces = re.split(r"%[-#0 +]*\d*(?:\.\d+)?[sdrifx]|\{[^{}]*\}", template)
    return [x for piece in pieces for x in (piece, None)][:-1]


def _squeeze(shape: str) -> str:
    while "**" in shape:
        shape = shape.replace("**", _ANY)
    return shape


def _top_files(pattern: str) -> tuple[str, dict[str, str]]:
    """The digest of the texts of the module files (a package's: all of
    them) in the user's folders on `sys.path` whose module name matches,
    and a short digest of each module's (or package's) texts by its name."""
    digest, count, each = hashlib.sha256(), 0, {}
    for folder in _user_folders():
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            stem = name[:-3] if name.endswith(".py") else name if os.path.isfile(os.path.join(path, "__init__.py")) else ""
            if not stem or not fnmatch.fnmatchcase(stem, pattern) or not is_user_file(path, stem):
                continue  # durable itself, beside the user's code in a checkout, is not theirs
            own = hashlib.sha256()
            for rel, text in _texts(path):
                count += 1
                if count > _FILES:
                    return UNTOLD, {}
                digest.update(f"{rel}\0{len(text)}\0".encode() + text)
                own.update(f"{rel}\0{len(text)}\0".encode() + text)
            each[stem] = own.hexdigest()[:8]
    return digest.hexdigest()[:16], each


def _user_folders() -> Iterator[str]:
    for folder in dict.fromkeys(os.path.abspath(entry or os.curdir) for entry in sys.path):  # "" is the working folder
        if os.path.isdir(folder) and is_user_file(os.path.join(folder, "__init__.py"), ""):
            yield folder


def _texts(path: str) -> Iterator[tuple[str, bytes]]:
    files = [path] if os.path.isfile(path) else [
        os.path.join(d, f) for d, subs, fs in sorted(os.walk(path)) if not subs.sort() for f in sorted(fs) if f.endswith(".py")
    ]  # fmt: skip
    for file in files:
        try:
            with open(file, "rb") as f:
                yield os.path.relpath(file, os.path.dirname(path)), f.read()
        except OSError:  # gone meanwhile: what it held is no longer there
            yield file, b""
