"""Registries the fingerprint did not look into: the standard library's
containers besides list, tuple, set and dict (a `weakref.WeakValueDictionary`,
`WeakSet` or `WeakKeyDictionary`, a class's weak registry filled by its
`__init_subclass__`, a `MappingProxyType` view, a `UserDict`, `UserList`,
`ChainMap` or `deque`, a dict's live `values()` view), a dict keyed by the
classes it registers (`BY_CLASS[cls] = name`), a `SimpleNamespace` a
decorator sets functions on, a dict of partials of the classes or of class
methods bound to them (`partial(cls)`, `cls.create`), a lookup through a
method or a partial (`GET = REG.get`, `partial(dict.__getitem__, REG)`,
`LOOKUP = registry.get`), and a registry a function keeps in a closure
cell (`add, get = make()`) or a partial binds (`partial(pick, REG)`). A
class decorator in `plugins.py` fills each; a step reads one
(`WEAK["P"]().run(x)`). Counted by the registry's statements alone, an
edit of the plugin replayed the output its old code computed. Each case
runs twice in a process of its own, the plugin edited between the runs
(refused); a step reading them all, not edited, replays."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import refused_after_edit, registry_runs

pytestmark = pytest.mark.slow

REGISTRY = """
import collections, functools, types, weakref

WEAK = weakref.WeakValueDictionary()
WEAK_SET = weakref.WeakSet()
WEAK_KEYS = weakref.WeakKeyDictionary()
INSTANCES = weakref.WeakValueDictionary()
_PLAIN = {}
PROXY = types.MappingProxyType(_PLAIN)
VIEW = _PLAIN.values()
GET = _PLAIN.get
PICK = functools.partial(dict.__getitem__, _PLAIN)
USER_DICT = collections.UserDict()
USER_LIST = collections.UserList()
CHAINED = collections.ChainMap({}, {})
QUEUE = collections.deque()
BY_CLASS = {}
OPS = types.SimpleNamespace()
PARTIALS = {}
FACTORIES = {}

class Registry:
    def __init__(self):
        self.classes = {}

    def get(self, name):
        return self.classes[name]

registry = Registry()
LOOKUP = registry.get

class Plugin:
    registry = weakref.WeakValueDictionary()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        Plugin.registry[cls.__name__] = cls

def _made():
    reg = {}

    def add(obj):
        reg[obj.__name__] = obj

    def get(name):
        return reg[name]

    return add, get

_add, closure_get = _made()

def pick(reg, name):
    return reg[name]

PICKED = functools.partial(pick, _PLAIN)

def register(obj):
    name = obj.__name__
    WEAK[name] = obj
    WEAK_SET.add(obj)
    WEAK_KEYS[obj] = name
    _PLAIN[name] = obj
    USER_DICT[name] = obj
    USER_LIST.append(obj)
    CHAINED.maps[1][name] = obj
    QUEUE.append(obj)
    BY_CLASS[obj] = name
    registry.classes[name] = obj
    setattr(OPS, name, obj)
    PARTIALS[name] = functools.partial(obj)
    FACTORIES[name] = getattr(obj, "create", obj)
    _add(obj)
    return obj
"""

# One plugin an edited case: a class (edited `x * 7`), or a function (edited
# `x * 9`); both in the one unedited case, whose step reads every registry.
CLASS = """
from registry import INSTANCES, Plugin, register

@register
class P(Plugin):
    @classmethod
    def create(cls):
        return cls()

    def run(self, x):
        return x * 7

KEEP = P()
INSTANCES["p"] = KEEP
"""

FUNCTION = """
from registry import register

@register
def p(x):
    return x * 9
"""

# name: (the registry `registry` holds that the step reads, what the step returns).
CASES = {
    "weak_values": ("WEAK", 'WEAK["P"]().run(x)'),
    "weak_set": ("WEAK_SET", "next(c for c in WEAK_SET if isinstance(c, type))().run(x)"),
    "weak_keys": ("WEAK_KEYS", "next(iter(WEAK_KEYS))().run(x)"),
    "weak_instances": ("INSTANCES", 'INSTANCES["p"].run(x)'),
    "weak_class_registry": ("Plugin", 'Plugin.registry["P"]().run(x)'),
    "mapping_proxy": ("PROXY", 'PROXY["P"]().run(x)'),
    "dict_values_view": ("VIEW", "list(VIEW)[0]().run(x)"),
    "dict_get": ("GET", 'GET("P")().run(x)'),
    "partial_getitem": ("PICK", 'PICK("P")().run(x)'),
    "user_dict": ("USER_DICT", 'USER_DICT["P"]().run(x)'),
    "user_list": ("USER_LIST", "USER_LIST[0]().run(x)"),
    "chain_map": ("CHAINED", 'CHAINED["P"]().run(x)'),
    "deque": ("QUEUE", "QUEUE[0]().run(x)"),
    "keyed_by_class": ("BY_CLASS", "next(iter(BY_CLASS))().run(x)"),
    "namespace": ("OPS", "OPS.p(x)"),
    "partials_of_classes": ("PARTIALS", 'PARTIALS["P"]().run(x)'),
    "class_methods": ("FACTORIES", 'FACTORIES["P"]().run(x)'),
    "method_lookup": ("LOOKUP", 'LOOKUP("P")().run(x)'),
    "closure": ("closure_get", 'closure_get("P")().run(x)'),
    "closure_of_functions": ("closure_get", 'closure_get("p")(x)'),
    "partial_of_a_function": ("PICKED", 'PICKED("P")().run(x)'),
}


def _functions(name: str) -> bool:
    return "functions" in name or name == "namespace"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return registry_runs(tmp_path_factory.mktemp, CASES, REGISTRY, (CLASS, FUNCTION), _functions)


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_edited_plugin_in_a_registry_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[name])  # was `value 70` (the old output)


def test_the_same_plugins_replay(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert f"value {[90 if _functions(n) else 70 for n in CASES]}" in second and after == ["s"], second
