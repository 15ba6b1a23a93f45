"""Strings a module makes from its own `__file__`, which count by their
statements (`bindings`), never by value: where a file lies is never part of
a fingerprint.

Pure standard library."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .bindings import binding_statements
from .canon import name_chains


def made_from_own_path(
    name: str, value: object, namespace: Mapping[str, Any], checked_file: str | None = None
) -> bool:
    """Whether `value` is a string the statements binding `name` make from
    the module's `__file__`, directly or through the names they read (`DATA = join(HERE, "data")`
    after `HERE = dirname(abspath(__file__))`). Such a string is where this
    copy of the file lies, which differs in another folder, checkout or
    machine: it counts by its statements, as a `Path` built so does, since
    the path of a file is never part of a fingerprint."""
    todo, seen = [name], {name}
    while todo and isinstance(value, str):
        try:
            found = binding_statements(todo.pop(), namespace, checked_file) or []
        except ConfigurationError:  # a stale file: counted by value, as before
            return False
        for chain in {c for stmt in found for c in name_chains(stmt)}:
            if chain[0] == "__file__":
                return True
            if chain[0] not in seen:
                seen.add(chain[0])
                todo.append(chain[0])
    return False
