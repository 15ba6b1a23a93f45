"""What a function holds besides its code and the names it reads: its
defaults and closure cells (`read_live`), and a partial's bound
arguments, counted by value where they are plain data and, where a
closure cell or a bound argument holds a registry (`get = make()` keeping
`reg = {}` that a class decorator fills, `partial(lookup, REG)`), by what
it holds: the functions there are followed and the user's classes there
count as if the function named them, as a global registry's do
(`subclasses`). Counted by their type alone, a resume replayed what the
plugin's old code computed. (A default's registry is a global its
expression names, which counts so already.)

Pure standard library.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Iterable
from typing import Any

from .analysis import Analysis
from .boundto import holds_by_type_only, names_bound_to
from .canon import node_hash
from .contents import closure_kept
from .factorycalls import factory_calls
from .holds import held_callables, held_classes, made_by, user_class
from .kept import kept_state, self_filled
from .madewith import defaults_from_outside, held_contents, made_from_outside
from .outside import reads_outside
from .outsidevalues import _made_with, outside_tokens
from .reach import _cell_value, is_durable
from .reads import _bound, _count, _Scope, _statement_reads
from .subclasses import _homes
from .values import _live_tokens, hash_tokens
from .witness import witnessed


def read_held(key: str, values: Iterable[object], out: Analysis, fn: Any = None) -> None:
    """Count what the registries among `values` hold (`key`: where they are
    kept), for `fn` when given: its module's file was checked against its
    running code already (a test module pytest rewrote fails a check of
    the whole file, and a value of its own class in a closure was refused)."""
    own, code = getattr(fn, "__globals__", None), getattr(fn, "__code__", None)
    for value in values:
        out.reached.extend(witnessed(held_callables, value))
        # A class held alone (`lambda: cls()` a closure registry keeps) is a registry of one.
        made = made_by(value)
        held = (made,) if isinstance(made, type) and user_class(made) else witnessed(held_classes, value)
        for via, cls, home in _homes(key, held):
            checked = code.co_filename if home is own and code is not None else None
            _count((cls.__name__,), cls, _Scope(home, True, checked), False, out, via)


def read_live(fn: Any, code: types.CodeType, out: Analysis) -> None:
    """Count `fn`'s defaults and closure cells, and the statements that made it."""
    kwdefaults = getattr(fn, "__kwdefaults__", None) or {}
    defaults = (getattr(fn, "__defaults__", None), tuple(sorted(kwdefaults.items())))
    if any(defaults):
        out.parts["defaults"] = hash_tokens(_live_tokens(defaults, out.reached))
        out.parts.update(defaults_from_outside(fn, code.co_filename))  # `ks=[int(os.environ["K"])]`
    cells = getattr(fn, "__closure__", None) or ()
    kept = kept_state(fn, code) if cells else frozenset()  # a counter it bumps: not an input
    if cells:
        named = zip(code.co_freevars, cells, strict=True)
        pairs = tuple((n, _cell_value(c)) for n, c in named if n not in kept)
        out.parts["closure"] = hash_tokens([*_live_tokens(pairs, out.reached), *closure_kept(fn)])
        filled = self_filled(fn, code)  # a singleton's `instances`: it holds what the calls made
        for name, value in pairs:  # `reg` of `get = make()`; not a method's own class (`super()`)
            if name not in filled and name != "__class__":
                read_held(f"closure:{name}:", [value], out, fn)
    # Not witnessed: `live_state` checks what it reads, without tokenising a closure at every memo check.
    if holds_by_type_only(fn):
        # `first = make_step([1, 2])` below the factory: the statement counts in the function's own
        # fingerprint too, not only in its readers' (a step's own is what on_change="rerun" compares).
        module = _Scope(getattr(fn, "__globals__", {}), True, code.co_filename)
        names = witnessed(names_bound_to, module.namespace, fn)
        if names:
            out.parts["made"] = hash_tokens(_bound(n, fn, module, out) for n in names)
            out.parts.update(made_from_outside(fn, kept, names, module.namespace, code.co_filename))
        found = [] if names else witnessed(factory_calls, fn, module.namespace)
        for main, calls in found:  # `print(mk([1])(5))`, `w = mk([1])` in a script importing `mk`
            where = _Scope(vars(sys.modules["__main__"]), True) if main else module
            _statement_reads(f"{fn.__qualname__}()", list(calls), where, out)
            out.parts.update(made_from_outside(fn, kept, [], where.namespace, where.checked_file, calls))
            out.parts["made"] = hash_tokens([out.parts.get("made", ""), *map(node_hash, calls)])
        out.parts.update({} if names or found else held_contents(fn, kept))  # `def main(): mk([1])(5)`



def wrappers_of(fn: Any, target: Any) -> list[Any]:
    """What `functools.wraps` decorators put between `fn` and the function
    that runs (`target_of`), outermost first: their wrapper functions and
    the instances of the user's classes that `update_wrapper` was given."""
    chain: list[Any] = []
    while fn is not target and len(chain) < 100:  # a `__wrapped__` cycle ends
        if type(fn) is types.FunctionType or (_own_wrapper(fn) and not is_durable(fn)):
            chain.append(fn)
        try:
            fn = getattr(fn, "__wrapped__", None)
        except Exception:  # a proxy whose attributes raise: `target_of` stopped there too
            break
        if fn is None:
            break
    return chain


def _own_wrapper(obj: object) -> bool:
    # Not a bound method, whose `__dict__` is its function's.
    return "__wrapped__" in getattr(obj, "__dict__", {}) and not isinstance(obj, types.MethodType) and (
        witnessed(user_class, type(obj))
    )


def read_wrappers(fn: Any, target: Any, nodes: list[ast.AST], out: Analysis) -> None:
    """Count what the wrappers between `fn` and `target` hold: plain data by
    value, as a closure's (`read_live`), and, when the decorator lines of
    `target`'s definition (`nodes`) read the environment or a file, by
    content, as a class's methods count what they were made with
    (`_made_with`): a decorator factory's argument (`@scaled(json.load(f)
    ["k"])`, `@scaled(int(os.environ["K"]))`, a config object loaded from a
    file) lives only in the wrapper's closure or attributes, and the line
    reads the same whatever it is; the wrapper's code counts as a helper of
    the name the line reads (`scaled`). Not by content otherwise: a logger
    or a client a wrapper holds is no input. The functions of the chain
    itself are left out (each is followed through `__wrapped__`)."""
    chain = wrappers_of(fn, target)
    if not chain:
        return
    lines: list[ast.AST] = [d for n in nodes for d in getattr(n, "decorator_list", ())]
    made = reads_outside(lines, getattr(target, "__globals__", {}), target.__code__.co_filename)
    inside = {id(f) for f in chain} | {id(target)}
    for i, wrapper in enumerate(chain):
        if type(wrapper) is not types.FunctionType:  # `update_wrapper(self, fn)`: its attributes
            toks = (witnessed(outside_tokens, wrapper) if made else None) or []
            name = type(wrapper).__qualname__
        else:
            code = wrapper.__code__
            kept = kept_state(wrapper, code) if wrapper.__closure__ else frozenset()
            cells = zip(code.co_freevars, wrapper.__closure__ or (), strict=True)
            pairs = tuple((n, v) for n, c in cells if n not in kept and id(v := _cell_value(c)) not in inside)
            held = (wrapper.__defaults__, tuple(sorted((wrapper.__kwdefaults__ or {}).items())), pairs)
            toks = _live_tokens(held, out.reached) if any(held) else []
            toks += (_made_with(wrapper) or []) if toks and made else []
            name = code.co_name
        if toks:  # one holding only what it wraps (`@plus`) keeps the fingerprint it had
            out.parts[f"values held by wrapper:{name} (decorator {i + 1})"] = hash_tokens(toks)
