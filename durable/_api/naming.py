"""A workflow's default name, and the name the same function has when its
file is started the other way (as a script, or imported as a module)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from .._fingerprint.reach import default_name, script_name


def default_workflow_name(fn: Callable[..., Any]) -> str:
    """The qualified name; for a script's own workflows prefixed with the
    script's file name, so that two scripts sharing a store never share
    runs (`flow.main` and `other.main`). Steps need no prefix: their names
    only have to differ within one workflow, and their fingerprints carry
    the full identity."""
    script = script_name(fn)
    return default_name(fn) if script is None else f"{script}.{default_name(fn)}"


def script_twin(fn: Callable[..., Any]) -> str | None:
    """The name `python flow.py` gives a workflow of module `flow` (or
    `pkg.flow`) imported: `flow.wf` for the import's `wf`. A notebook or a
    REPL that imports the script's module lists the script's runs by it.
    None for a script's own workflow: its import name (`wf`) is every
    notebook's too, not only this file's."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if module is None or module.__name__ in ("__main__", "__mp_main__"):
        return None
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py"):
        return None
    stem = os.path.splitext(os.path.basename(file))[0]
    return None if stem == "__init__" else f"{stem}.{default_name(fn)}"
