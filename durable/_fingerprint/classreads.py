"""What the statement of a class reads (`RATE = helpers.RATE`, `backend =
helpers`, `score = Scorer().score`, `class Model(Base, metaclass=Meta)`),
counted as what a global's statements read is (`reads`).

Pure standard library. A class counted by its statement's text (an object
of the user's class passed to a step, a method step's `self`: see
`_core.code.class_stamp`) holds the values that text names: a method
reading `self.RATE` or calling `self.backend.scale(x)` gets them, and the
text alone does not change when they do."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from .analysis import UNHASHED, Analysis
from .reads import _Scope, _statement_reads


def statements_read(
    name: str, found: list[ast.AST], namespace: Mapping[str, Any], checked_file: str | None
) -> tuple[list[str], list[object]]:
    """The parts (as tokens, in key order) and the functions and steps that
    the statements `found`, which bind `name` in `namespace`, read."""
    out = Analysis()
    _statement_reads(name, found, _Scope(namespace, True, checked_file), out)
    return [t for key in sorted(out.parts) if not key.startswith(UNHASHED) for t in (key, out.parts[key])], out.reached
