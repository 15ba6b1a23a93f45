"""What the analysis of one function gathers (`reads.read_names`), and what
it has worked out once while it runs."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .._frozen import Compared, dataclass

#: The prefix of a part that is never hashed: which other loaded modules'
#: statements a part counts (`where:random state` -> "script"), so that a
#: refusal names them; what they are counts in the part itself.
WHERE = "where:"
#: The prefix of a part that counts a global by what it holds now (program state).
NOW = "now:"
#: The prefix of a part that is never hashed: a digest of each attribute of a
#: global a `now:` part counts, so that a refusal names the one that differs.
SAID = "said:"
#: The parts that are never hashed into a fingerprint.
UNHASHED = (WHERE, SAID)


@dataclass
class Analysis(Compared):
    """What one function contributes by itself, and what it leads to."""

    parts: dict[str, str] = field(default_factory=dict)
    reached: list[object] = field(default_factory=list)
    # The functions the statements binding a global it only writes call
    # (`main()` emptying the LOG a step appends to): they count by their
    # code, not by the program's state they read, which is no input of it.
    made: list[object] = field(default_factory=list)
    unresolved: set[str] = field(default_factory=set)
    # (id of a module's namespace, name, inside): what its binding statements read, followed once.
    followed: set[tuple[int, str, bool]] = field(default_factory=set)
    kept: frozenset[tuple[int, str]] = frozenset()  # (id(its globals), a global it only writes)
    inside: frozenset[tuple[int, str]] = frozenset()  # those whose statements are followed
    # What `_bound` and `_global` gave for the same question earlier in this
    # analysis: names whose statements read each other ask it again and again.
    again: dict[tuple[Any, ...], Any] = field(default_factory=dict)
