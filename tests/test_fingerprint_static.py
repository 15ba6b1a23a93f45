"""`static.static_has` tells what `inspect.getattr_static` would find, for
the objects a module's namespace mostly holds, and defers to it (None) for
the rest; `is_durable` asks it first, so a walk of a module's globals calls
`getattr_static` for none of a plain module's objects."""

from __future__ import annotations

import abc
import enum
import functools
import inspect
import sys
import types
from typing import Any

import pytest

import durable
from durable._fingerprint import reach
from durable._fingerprint.boundto import names_bound_to
from durable._fingerprint.static import static_has

MARK = "__durable_fingerprint__"


class Plain:
    pass


class Marked:
    __durable_fingerprint__ = "fp"


class Inherits(Marked):
    pass


class Slotted:
    __slots__ = ("a",)


class SlottedDict:
    __slots__ = ("__dict__",)


class OwnDict:
    @property  # type: ignore[misc]
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        raise AssertionError("a static lookup ran a property")


class Meta(type):
    __durable_fingerprint__ = "meta"


class ByMeta(metaclass=Meta):
    pass


class MakesItsDict(type):
    @property
    def __dict__(self) -> Any:  # type: ignore[override]
        # the real namespace: the fingerprint walk reads it (`vars(cls)`) too
        return type.__dict__["__dict__"].__get__(self)


class OddMeta(metaclass=MakesItsDict):
    pass


class Color(enum.Enum):
    RED = 1


class Abstract(abc.ABC):  # noqa: B024  (an ABCMeta class: its metaclass is plain too)
    __durable_fingerprint__ = "abc"


class Dynamic:
    def __getattr__(self, name: str) -> str:
        return "anything"


def _zoo() -> list[object]:
    stamped = Plain()
    stamped.__durable_fingerprint__ = "fp"  # type: ignore[attr-defined]
    own = OwnDict.__new__(OwnDict)
    slotted_dict = SlottedDict()
    slotted_dict.__dict__ = {MARK: 1}
    step = durable.step(lambda x: x)

    @durable.workflow
    def flow() -> None:
        pass

    return [
        Plain(), stamped, Marked(), Inherits(), Slotted(), slotted_dict, own, ByMeta(), ByMeta,
        Meta, Color, Color.RED, OddMeta, OddMeta(), abc.ABC, Abstract(), Dynamic(), Plain, Marked, Inherits, type, object, object(), 5,
        "s", None, len, functools.partial(len), sys.modules[__name__].__spec__,
        sys.modules[__name__].__loader__, step, flow, durable.Workflow, durable.Step,
    ]  # fmt: skip


@pytest.mark.parametrize("attr", [MARK, "a", "__dict__", "missing"])
def test_what_it_tells_is_what_getattr_static_finds(attr: str) -> None:
    missing = object()
    told_for = 0
    for obj in _zoo():
        told = static_has(obj, attr)
        if told is not None:
            told_for += 1
            assert told == (inspect.getattr_static(obj, attr, missing) is not missing), obj
    assert told_for >= 20
    if attr == MARK:
        for deferred in (OwnDict.__new__(OwnDict), OddMeta, OddMeta()):
            assert static_has(deferred, attr) is None


def test_a_modules_globals_are_told_without_getattr_static(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[object] = []
    real = inspect.getattr_static

    def counted(obj: object, *args: Any) -> Any:
        asked.append(obj)
        return real(obj, *args)

    monkeypatch.setattr(inspect, "getattr_static", counted)
    namespace = {
        "__spec__": sys.modules[__name__].__spec__,
        "__loader__": sys.modules[__name__].__loader__,
        "__builtins__": __builtins__,
        "Plain": Plain,
        "Marked": Marked,
        "plain": Plain(),
        "types": types,
    }
    assert names_bound_to(namespace, Plain) == ["Plain"]
    assert asked == [], asked
    assert reach.is_durable(Marked()) and not reach.is_durable(Plain())
