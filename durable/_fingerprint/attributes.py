"""How an object counts by its attributes: the plain data it holds, and
that of the objects of the user's classes and namespaces it holds in turn
(`settings.model.name`), for a global whose contents count (`contents`,
`outsidevalues`).

Pure standard library."""

from __future__ import annotations

import array
import collections
import enum
import itertools
import re
import sys
import types
from typing import Any

from .executors import library_attributes
from .imports import user_class
from .ownpath import path_tokens
from .userfiles import is_user_file
from .values import _qualname, fresh_token, hash_tokens, plain_tokens
from .witness import witnessed

_PATTERN = re.compile("")


def attribute_tokens(obj: object, *, public: bool = False) -> list[str] | None:
    """Tokens of the attributes of `obj` that are plain data (`fn.k = 2`,
    `ns.limit = 10` run at module level between two calls), or only its
    `public` ones, and of those of the objects of the user's classes and
    namespaces it holds, in turn (`settings.model.name = sys.argv[1]` in a
    script's main block: counted by `settings`' plain attributes alone, the
    resume with another name replayed the old one's output); None when it
    has none: what is not plain still counts by its statements only.
    At any depth: a cut at 8 objects counted a deeper configuration as
    changed in every process; only one nested past the recursion limit
    is (fail closed), never a crash."""
    try:
        return _attribute_tokens(obj, public, ())
    except RecursionError:
        return [fresh_token()]


def _logger(obj: object) -> bool:
    """Whether `obj` is a `logging.Logger` (not imported for it: `sys.modules`)."""
    logging = sys.modules.get("logging")
    return logging is not None and isinstance(obj, logging.Logger)


def _attribute_tokens(obj: object, public: bool, _seen: tuple[int, ...]) -> list[str] | None:
    attrs = [*_slots(obj), *(vars(obj).items() if hasattr(obj, "__dict__") else ())]
    attrs = [(k, v) for k, v in attrs if k not in library_attributes(obj)]  # a pool's thread names: no input
    if _logger(obj):  # which levels it was asked about, filled by each `LOG.info`: no setting of it
        attrs = [(k, v) for k, v in attrs if k != "_cache"]
    seen = (*_seen, id(obj))
    plain, nested = {}, []
    for k, v in attrs:
        if not isinstance(k, str) or (public and k.startswith("_")):
            continue
        if plain_tokens(v) is not None:
            plain[k] = v
        elif (toks := path_tokens(v)) is not None:  # `settings.out = Path(sys.argv[1])`
            nested += [f"<path:{k}", *toks, ">"]
        elif (held := _held_tokens(v, public, seen)) is not None:
            nested += [f"<attr:{k}", *held, ">"]
        elif _callback(obj, v):  # `PIPE.tail = two` in `main()`: which function of yours it holds
            nested += [f"<fn:{k}", f"{v.__module__}.{v.__qualname__}", ">"]
    if not nested:
        return plain_tokens(plain) if plain else None
    return [*(plain_tokens(plain) or []), *nested]


def _callback(obj: object, value: object) -> bool:
    """A function of yours an object of your class holds (not a namespace's,
    whose functions counted by their statements alone: fingerprints made so
    stay the same)."""
    if type(value) is not types.FunctionType or isinstance(obj, types.SimpleNamespace):
        return False
    home = str(value.__module__).partition(".")[0]
    return is_user_file(value.__code__.co_filename, home) and bool(witnessed(user_class, type(obj)))


def attribute_digests(obj: object, _path: str = "", _seen: tuple[int, ...] = ()) -> dict[str, str]:
    """A short digest of what each attribute of a settings object (or each
    key of a dict) counts by, by its path (`.model.name`, `['k']`), three
    levels down: for a refusal to say which one differs (`said`)."""
    if isinstance(obj, dict):  # the first 64: a refusal names a few
        pairs = [(f"{_path}[{k!r}]", v) for k, v in itertools.islice(obj.items(), 64) if isinstance(k, str)]
    elif settings_object(obj):
        attrs = [*_slots(obj), *(vars(obj).items() if hasattr(obj, "__dict__") else ())]
        attrs = [(k, v) for k, v in attrs if k not in library_attributes(obj)]  # a pool's thread names: no input
        if _logger(obj):  # which levels it was asked about, filled by each `LOG.info`: no setting of it
            attrs = [(k, v) for k, v in attrs if k != "_cache"]
        pairs = [(f"{_path}.{k}", v) for k, v in attrs[:64] if isinstance(k, str)]
    else:
        return {}
    seen, out = (*_seen, id(obj)), {}
    for path, value in pairs:
        try:
            inner = attribute_digests(value, path, seen) if len(seen) < 3 and id(value) not in seen else {}
            toks = None if inner else _item_tokens(value, False, seen)
        except Exception:  # RecursionError, an odd `__dict__`: not named
            continue
        out.update(inner or ({path: hash_tokens(toks)[:8]} if toks is not None else {}))
    return out


def settings_object(value: object) -> bool:
    """An object of the user's class or a namespace (`types.SimpleNamespace`),
    whose attributes a program sets as its configuration: not a class,
    module or function (their code counts), nor a library's object (a
    client, a logger), whose state is no configuration of yours."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType)):
        return False
    if type(value) is types.SimpleNamespace or type(value) is getattr(sys.modules.get("argparse"), "Namespace", None):
        return True  # `settings.args = parser.parse_args()`
    return bool(witnessed(user_class, type(value)))


def _held_tokens(value: object, public: bool, seen: tuple[int, ...]) -> list[str] | None:
    """What an attribute holds beyond plain data: an object of `settings_object`
    by `attribute_tokens` (its type alone when it holds nothing plain), a
    list, tuple (a namedtuple too), set or dict of those, paths and plain
    data by each (`settings.stages[0].k = 2`), a compiled pattern by its
    text and flags; None for anything else (a logger, a lock, a client),
    which counts as before (by its statements).
    An attribute that raises (a `__dict__` property), or nested past the
    recursion limit: a change (fail closed)."""
    if id(value) in seen:
        return None
    if settings_object(value):
        try:
            inner = _attribute_tokens(value, public, seen) or []
            if isinstance(value, (list, tuple, dict)):  # a namedtuple of yours: what it holds too
                inner += _items_of(value, public, seen) or []
        except Exception:  # RecursionError, whatever an odd `__dict__`, slot or `__iter__` raises
            inner = [fresh_token()]
        return [f"<obj:{_qualname(type(value))}", *inner, ">"]
    if isinstance(value, (set, frozenset)):  # `{Path(a)}`: each by its tokens, in their order
        each = [_item_tokens(item, public, (*seen, id(value))) for item in value]
        return None if None in each else [f"<set:{len(each)}", *sorted("".join(t or []) for t in each), ">"]
    if type(value) is type(_PATTERN):  # `re.compile(sys.argv[1])`
        return [f"<re:{value.flags}", *(plain_tokens(value.pattern) or []), ">"]
    # Immutable values plain data leaves out: `range(int(sys.argv[1]))` went uncounted.
    if isinstance(value, (range, slice)):
        parts = _items_of((value.start, value.stop, value.step), public, seen)
        return None if parts is None else [f"<{type(value).__name__}", *parts, ">"]
    if isinstance(value, enum.Enum):  # a library's member (`HTTPStatus(code)`): by its class and name
        return [f"<enum:{_qualname(type(value))}", *(plain_tokens(value.name) or [fresh_token()]), ">"]
    if isinstance(value, (bytearray, array.array)):  # by its item type and bytes
        return [f"<{getattr(value, 'typecode', 'bytearray')}", *(plain_tokens(bytes(value)) or []), ">"]
    if isinstance(value, (collections.deque, collections.ChainMap, types.MappingProxyType)):
        listed = _items_of(list(value) if isinstance(value, collections.deque) else dict(value), public, seen)
        return None if listed is None else [f"<{type(value).__name__}", *listed, ">"]
    if type(value).__module__ == "ipaddress":  # `ip_address(sys.argv[1])`: by its text
        return [f"<{type(value).__name__}", *(plain_tokens(str(value)) or []), ">"]
    return _items_of(value, public, seen) if isinstance(value, (list, tuple, dict)) else None


def _item_tokens(item: object, public: bool, seen: tuple[int, ...]) -> list[str] | None:
    toks = plain_tokens(item)
    toks = path_tokens(item) if toks is None else toks
    return _held_tokens(item, public, seen) if toks is None else toks


def _items_of(value: list[Any] | tuple[Any, ...] | dict[Any, Any], public: bool, seen: tuple[int, ...]) -> list[str] | None:
    pairs = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    out = [f"<{type(value).__name__}:{len(pairs)}"]
    for key, item in pairs:
        toks = _item_tokens(item, public, (*seen, id(value)))
        key_toks = plain_tokens(key)
        if toks is None or key_toks is None:
            return None
        out += [*key_toks, *toks]
    return [*out, ">"]


def _slots(obj: object) -> list[tuple[str, object]]:
    """The values of the `__slots__` `obj`'s classes declare, that are set.
    Read through each slot's own descriptor: `hasattr` of an unset slot ran
    the class's `__getattr__`, whose `self._data[k]` raised KeyError, and the
    whole object (the class held in its other slots) went unread."""
    found = []
    for cls in type(obj).__mro__[:-1]:
        declared = vars(cls).get("__slots__", ())
        for slot in (declared,) if isinstance(declared, str) else declared:
            member = vars(cls).get(slot)
            if isinstance(member, types.MemberDescriptorType):
                try:
                    found.append((slot, member.__get__(obj, cls)))
                except AttributeError:  # unset
                    continue
    return found
