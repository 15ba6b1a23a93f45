"""A step's fingerprint with the steps it reaches, as one function of the
code: the same whichever step was fingerprinted first, in whichever
process, and whichever module was imported first.

Each function's own fingerprint leaves the steps it reaches out, listing
them (`Fingerprint.reached`); the steps reached from one, and the steps
those reach, make a graph, whose strongly connected parts (steps that call
each other, a step calling itself) are found once (Tarjan). A step outside
the caller's part counts by its whole fingerprint, as a helper counts by
its parts; the steps of one part count in each other by one digest of the
part: every member's own fingerprint and the whole fingerprints of the
steps outside it that they reach. So every step a call may run counts by
its code as it is now. Before, the recursion through steps calling each
other ended at the fingerprint a step had at its decoration, which
depends on what was imported then: `import tools` before `import agents`
gave another fingerprint than the other way round, and a run recorded
under one was refused under the other.

Pure standard library."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from .analysis import NOW, SAID
from .fingerprint import Fingerprint, _flatten, digest
from .reach import reached_stamp_of
from .values import hash_tokens
from .witness import witnessed

#: A function fingerprinted as the decorator was told: (fn, name, version, deep).
Node = tuple[Any, str | None, str | None, bool]
#: An edge: the part it counts under, the step it leads to (or None) and,
#: for a workflow or other object carrying a fingerprint, its stamp.
_Edge = tuple[str, Hashable | None, str | None]


def step_node(obj: object) -> Node | None:
    """How a step reached from a function is fingerprinted (what its
    decorator was told), None for a workflow or other fingerprinted object
    (stamped as a leaf: a workflow by its body, which reaches no step)."""
    try:
        spec = getattr(obj, "__durable_step__", None)
        fn = getattr(spec, "fn", None)
        return None if fn is None else (fn, spec.pinned_name, spec.version, spec.deep)  # type: ignore[union-attr]
    except Exception:  # a proxy or lazy object may raise anything: stamped as a leaf, which says so
        return None


def graph_fingerprint(
    root: Node, key: Callable[[Node], Hashable], own: Callable[[Node], Fingerprint]
) -> Fingerprint:
    """The fingerprint of `root` with every step it reaches: `own(node)` a
    function's fingerprint without its steps (memoised by the caller, under
    `key(node)`)."""
    graph = _Graph(key, own)
    top = key(root)
    graph.nodes[top] = root
    graph.visit(top)
    full: dict[Hashable, Stamp] = {}
    for part in graph.parts:  # each after every part it reaches (Tarjan's order)
        members = set(part)
        # A step reaching itself (through its module's `globals()`, or calling itself)
        # counts its own code already: a constant says so.
        token: Stamp = ("itself", "itself", {})
        if len(part) > 1:
            inside = [graph.whole(m, members, full, ("in the part", "in the part", {})) for m in part]
            token = (
                "steps calling each other:" + hash_tokens(sorted(s[0] for s in inside), 12),
                "steps calling each other:" + hash_tokens(sorted(s[1] for s in inside), 12),
                _joined(s[2] for s in inside),
            )
        for m in part:
            full[m] = graph.whole(m, members, full, token)
    return graph.made[top]


#: A step's stamp in its caller: its whole fingerprint; the same made
#: without the contents of globals and constants (`now:`, `const:` parts)
#: of every step it stands for; and those parts, by the step's identity.
Stamp = tuple[str, str, Mapping[str, str]]
_HELD = (NOW, "const:")


def _joined(helds: Iterable[Mapping[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for held in helds:
        for k, v in held.items():  # two steps of one identity: a change of either shows
            out[k] = v if out.get(k, v) == v else hash_tokens(sorted((out[k], v)))
    return out


class _Graph:
    def __init__(self, key: Callable[[Node], Hashable], own: Callable[[Node], Fingerprint]) -> None:
        self.key, self.own = key, own
        self.nodes: dict[Hashable, Node] = {}
        self.owns: dict[Hashable, Fingerprint] = {}
        self.edges: dict[Hashable, list[_Edge]] = {}
        self.parts: list[list[Hashable]] = []
        self.made: dict[Hashable, Fingerprint] = {}
        self._index: dict[Hashable, int] = {}
        self._low: dict[Hashable, int] = {}
        self._stack: list[Hashable] = []
        self._on: set[Hashable] = set()

    def visit(self, k: Hashable) -> None:
        """Tarjan's strongly connected components, from `k`."""
        self._index[k] = self._low[k] = len(self._index)
        self._stack.append(k)
        self._on.add(k)
        fp = self.owns[k] = self.own(self.nodes[k])
        edges = self.edges[k] = []
        for name, obj in fp.reached:
            node = witnessed(step_node, obj)
            if node is None:
                edges.append((name, None, witnessed(reached_stamp_of, obj)))
                continue
            to = self.key(node)
            self.nodes.setdefault(to, node)
            edges.append((name, to, None))
            if to not in self._index:
                self.visit(to)
                self._low[k] = min(self._low[k], self._low[to])
            elif to in self._on:
                self._low[k] = min(self._low[k], self._index[to])
        if self._low[k] == self._index[k]:
            part = []
            while True:
                m = self._stack.pop()
                self._on.discard(m)
                part.append(m)
                if m == k:
                    break
            self.parts.append(part)

    def whole(self, k: Hashable, members: set[Hashable], full: dict[Hashable, Stamp], token: Stamp) -> Stamp:
        """k's fingerprint with its steps stamped: those of its own part by
        `token`, the others by their whole fingerprints (already made); and
        k's own `Stamp` (`Fingerprint.stamps` keeps each of its steps')."""
        stamps: dict[str, list[Stamp]] = {}
        for name, to, leaf in self.edges[k]:
            stamp: Stamp | None = token if to in members else full[to] if to is not None else None
            if to is None and leaf is not None:
                stamp = (leaf, leaf, {})  # a workflow's, by its body: nothing held apart
            if stamp is not None:
                stamps.setdefault(name, []).append(stamp)
        fp = self.owns[k]
        joined = {n: _one(v) for n, v in stamps.items()}
        parts = {**fp.parts, **{n: s[0] for n, s in joined.items()}}
        bare, own = _apart(fp)
        bare |= {n: s[1] for n, s in joined.items()}
        held = _joined([own, *(s[2] for s in joined.values())])
        made = Fingerprint(digest(fp.identity, *_flatten(parts)), fp.identity, parts, fp.unresolved, stamps=joined)
        self.made[k] = made
        return made.value, digest(fp.identity, *_flatten(bare)), held


def _apart(fp: Fingerprint) -> tuple[dict[str, str], dict[str, str]]:
    """A step's own parts without the contents of globals and constants it
    reads, and those, by its identity: its helpers' too, as said beside
    each (`helper_said`; a helper not said counts whole)."""
    bare: dict[str, str] = {}
    held: dict[str, str] = {}
    for p, v in fp.parts.items():
        said = _said(fp.parts.get(SAID + p)) if p.startswith("helper:") else None
        if p.startswith(_HELD):
            held[f"{fp.identity}\0{p}"] = v
        elif said is None:
            bare[p] = v
        else:
            bare[p] = hash_tokens(f"{k}={d}" for k, d in sorted(said.items()) if not k.startswith(_HELD))
            held.update((f"{fp.identity}\0{p}\0{k}", d) for k, d in said.items() if k.startswith(_HELD))
    return bare, held


def _said(text: str | None) -> dict[str, str] | None:
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    return found if isinstance(found, dict) and found else None


def _one(stamps: list[Stamp]) -> Stamp:
    """Two steps under one part name: both count."""
    if len(stamps) == 1:
        return stamps[0]
    values, bares = sorted(s[0] for s in stamps), sorted(s[1] for s in stamps)
    return hash_tokens(values), hash_tokens(bares), _joined(s[2] for s in stamps)
