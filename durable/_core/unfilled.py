"""Whether a step reads a global its workflow's body fills from outside
(`bound.Body.fills`: `n = int(sys.argv[1])` at import, read by the body),
decided once a step and run, so that such a run's steps that read none of
them are identified by their digest alone (`StepSpec.plain_in`) as the
steps of any other run are."""

from __future__ import annotations

import types

from .._fingerprint.derived import filled_objects, made_in
from .._fingerprint.heads import ANY
from .._fingerprint.stepcodes import reached_names
from .bound import Body


def reads_no_fill(fn: object, bodies: tuple[Body, ...]) -> bool:
    """Whether `held_by` finds nothing in `fn`, a function holding nothing
    (`bare`), for the bodies that fill a global (`Body.fills`), as
    `read_from_body` decides it, through the same walk (`reached_names`:
    its code and the user's code it reaches) names no filled global and
    reaches no filled object. Fails closed: a walk cut short, a way to any
    global (`globals()`, `getattr`...), or a body filling any global
    (`globals()[key] = ...`). Asked once a step and run (`StepSpec.plain_in`):
    the globals it names are taken as they are then."""
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__durable_made_at__"):
        return False
    filling = [made_in(body.function) for body in bodies if body.fills]
    if not filling:
        return True
    names, values, untold = reached_names(fn)
    if untold or not names.isdisjoint(_ESCAPES):
        return False
    for made in filling:
        objects = filled_objects(made)
        if ANY in made.stored or not names.isdisjoint(made.stored) or any(id(v) in objects for v in values):
            return False
    return True


_ESCAPES = frozenset({"globals", "vars", "locals", "eval", "exec", "getattr", "__dict__", "__globals__", "modules", "__import__", "import_module"})  # fmt: skip
