"""What `durable run` and `durable recover` name as TARGET: a workflow in a
file (`path/to/file.py:wf`, executed as `python file.py` would, without its
`__main__` block) or in a module (`package.module:wf`)."""

from __future__ import annotations

import ast
import difflib
import importlib
import os
import sys
import traceback
import types
from collections.abc import Sequence
from typing import Any

from .._api.workflow import Workflow
from .._errortext import id_word, program, shell_words
from .._manage.owners import find_workflow
from .._storage.factory import open_store
from ..errors import DurableError
from .common import UsageError
from .guessed import guessed
from .howto import target


def load_target(spec: str, typed: Sequence[str] = ()) -> Workflow[Any, Any]:
    """`path/to/file.py:name` or `package.module:name` -> the workflow;
    `typed`: the command line (`durable run RUN`: the line that goes on)."""
    where, sep, attr = spec.rpartition(":")
    if not sep and spec.endswith(".py") and os.path.isfile(spec):  # `durable run flow.py`
        names = _workflows(_namespace(spec, is_file=True))
        known = f"its workflows: {', '.join(names)}" if names else "it defines none"
        raise UsageError(f"target {spec!r} names no workflow; {known}"
                         + (f" (give it as {shell_words(f'{spec}:{names[0]}')})" if names else ""))  # fmt: skip
    if not sep or not where or not attr:
        raise UsageError(
            f"target {spec!r} must be path/to/file.py:workflow or package.module:workflow"
            + (_run_named(spec, typed) if not sep else "")
        )
    if where.endswith(".ipynb"):  # JSON, which Python would run into a NameError of `null`
        raise UsageError(
            f"cannot load {where}: it is a notebook, and durable run loads a Python file or module; "
            f"run its workflow in the notebook ({attr}(...), or {attr}.resume(RUN_ID): `{program()} show RUN` "
            "prints the call for a run), or move the workflow to a .py file (a script's workflow is named "
            "after the script: its runs are not the notebook's); nothing was run"
        )
    is_file = where.endswith(".py") or os.sep in where or os.path.isfile(where)
    if is_file and not os.path.exists(where):  # a typo: the file meant, not Errno 2 and a path
        folder = os.path.dirname(where) or "."
        scripts = sorted(f for f in os.listdir(folder) if f.endswith(".py")) if os.path.isdir(folder) else []
        near = [os.path.join(os.path.dirname(where), n) for n in difflib.get_close_matches(os.path.basename(where), scripts, n=1)]
        meant = f"; did you mean {near[0]}? ({shell_words(f'{near[0]}:{attr}')})" if near else ""
        raise UsageError(f"cannot load {where}: there is no such file in {os.path.abspath(folder)}{meant}")
    namespace = _namespace(where, is_file=is_file)
    obj: Any = namespace.get(attr.split(".")[0])
    for part in attr.split(".")[1:]:
        owner, obj = obj, getattr(obj, part, None)
        if isinstance(owner, type) and isinstance(vars(owner).get(part), Workflow):  # not static
            raise UsageError(
                f"{attr} in {where} is a method of class {owner.__name__}: durable run cannot "
                "make the instance it is called on; make it a @staticmethod or a function of "
                "the module, or call it from Python"
            )
    if not isinstance(obj, Workflow):
        names = _workflows(namespace)
        known = f"; its workflows: {', '.join(names)}" if names else "; it defines no workflow"
        near = difflib.get_close_matches(attr, names, n=1)
        if obj is None:
            raise UsageError(f"{where} has no {attr}" + (f"; did you mean {near[0]}?{known[1:]}" if near else known))
        what = "a @durable.step" if hasattr(obj, "__durable_step__") else f"a {type(obj).__name__}"
        fix = ": put @durable.workflow on it to run it" if what == "a function" else ""  # a script's own main()
        raise UsageError(f"{attr} in {where} is {what}, not a @durable.workflow{fix}{known}")
    return obj


def _run_named(spec: str, typed: Sequence[str]) -> str:
    """"; R is the id of a run of W; to go on with it: ..." for `durable
    run R`, a run's id given where its script and function belong; for
    `durable recover R`, the line that names its workflow instead."""
    words = list(typed)
    try:
        store = open_store(words[words.index("--store") + 1] if "--store" in words[:-1] else None)
        workflow = find_workflow(store, spec)
    except DurableError:  # no such run (or none to be read): the target was mistyped, as said
        return ""
    said = f"; {id_word(spec)} is the id of a run of {workflow}"
    if "run" not in words:  # `durable recover R`: it takes the run's workflow
        found = target(store, workflow, spec)
        line = f"{program()} {shell_words(*[found if w == spec else w for w in words])}" if found else ""
        return f"{said}; recover takes its workflow" + (f": {line}" if line else " (as file.py:function)")
    words[words.index("run")] = "resume"  # the API's word: `guessed` prints what does it
    return f"{said}; to go on with it: {guessed('resume', words)}"


def _workflows(namespace: dict[str, Any]) -> list[str]:
    """The workflows TARGET can name: the functions', and the static methods'
    of the classes the file defines (`Jobs.nightly`; a method's instance
    cannot be made, an imported class's are its module's)."""
    names = [k for k, v in namespace.items() if isinstance(v, Workflow)]
    for k, v in namespace.items():
        if isinstance(v, type) and v.__module__ == namespace.get("__name__"):
            names += [f"{k}.{m}" for m, a in vars(v).items() if isinstance(a, staticmethod) and isinstance(a.__func__, Workflow)]
    return sorted(names)


def _namespace(where: str, *, is_file: bool) -> dict[str, Any]:
    """The names the file or module defines, once it has run as loaded."""
    try:
        return _load_file(where) if is_file else vars(_import(where))
    except (OSError, ImportError, SyntaxError) as e:
        raise UsageError(f"cannot load {where}: {type(e).__name__}: {e}{_missing(e, where)}; nothing was run") from e
    except SystemExit as e:  # its exit code read as the run's: 0 "done", 3 "suspended"
        raise UsageError(
            f"cannot load {where}: it called sys.exit({e.code!r}) as it was loaded "
            f"({_raised_at(e, where)}); put the script's own work under `if __name__ == "
            "\"__main__\":`, which durable run skips. The workflow was not run"
        ) from e
    except Exception as e:  # the code itself failed as it ran, before any workflow
        raise UsageError(
            f"cannot load {where}: {type(e).__name__}: {e} ({_raised_at(e, where)}); "
            "nothing was run. --debug shows the traceback"
        ) from e


def _missing(e: BaseException, where: str) -> str:
    """What to do about a module not found: the target's own (run from
    another folder), else one it imports, most often installed in another
    environment than the one whose `durable` is on the PATH."""
    name = getattr(e, "name", None) if isinstance(e, ModuleNotFoundError) else None
    if not name:
        return ""
    top, module = name.split(".")[0], not where.endswith(".py")
    if module and (where == name or where.startswith(f"{name}.")):
        return (f". There is no module {name} here: run the command in the folder that holds it "
                f"(or with it on PYTHONPATH), or give the file's path, path/to/file.py:WORKFLOW")  # fmt: skip
    if module and where.split(".")[0] == top:  # a module of the target's own package
        return ""
    return (f". Install {top} in the Python the command runs in ({sys.executable}), or run "
            f"`python -m durable` with the Python whose environment has it")


def _raised_at(e: BaseException, where: str) -> str:
    """Where the error was raised: the innermost frame, the loaded file by
    the name it was given."""
    frame = traceback.extract_tb(e.__traceback__)[-1]
    same = os.path.abspath(where) == frame.filename
    return f"{where if same else frame.filename}, line {frame.lineno}"


def _import(module: str) -> types.ModuleType:
    if os.getcwd() not in sys.path:  # as `python -m` would
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(module)


def _load_file(path: str) -> dict[str, Any]:
    """Execute a script as `python file.py` would, as module `__main__`, so
    that its functions get the same identity (`__main__.name`) and hence the
    same fingerprints, but without its top-level `if __name__ ==
    "__main__":` block, which would start the script's own work."""
    path = os.path.abspath(path)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    body: list[ast.stmt] = []
    for node in tree.body:
        body.extend(node.orelse if _is_main_guard(node) else [node])  # type: ignore[attr-defined]
    tree.body = body
    module = types.ModuleType("__main__")
    module.__file__ = path
    sys.modules["__main__"] = module
    sys.path.insert(0, os.path.dirname(path))
    sys.argv = [path]
    # dont_inherit: this module's own `from __future__ import annotations`
    # must not leak into the script (it would turn its annotations into strings).
    exec(compile(tree, path, "exec", dont_inherit=True), module.__dict__)
    return module.__dict__


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1
