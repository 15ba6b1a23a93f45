"""Values a step computes with that a statement's text did not show: a
class a decorator or a metaclass put in a module-level registry
(`REG["Doubler"]().run(x)`, the plugin's class in another module; in a
dict of dicts, or in an object of the user's class, `registry.classes`; or
an instance of it, `REG[name] = cls()`; a `defaultdict` or an
`OrderedDict` of classes or functions), an
implementation another module registered with a class's
`functools.singledispatchmethod` (`@F.fmt.register`), or the function of a
property or `partialmethod` it sets on the class (`Model.k =
property(get_k)`), a class a
module-level statement chose from the environment (`IMPL = {"2": A, "3":
B}[os.environ["K"]]`), a context variable's default read from the
environment (`ContextVar("k", default=int(os.environ["K"]))`), which of
two lambdas on one line a global holds (`OP = OPS[os.environ["K"]]`), and a seed a
function called at import sets (`def main(): random.seed(1)` then
`main()`). Counted by the registry's, the statement's or the import's text
alone, a resume replayed the output computed before the edit. Each case
runs twice in a process of its own: once edited between the runs
(refused), once not (replayed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow



REGISTRY = """
import collections
import functools

REG = {}

class F:
    @functools.singledispatchmethod
    def fmt(self, x):
        return 0

def register(cls):
    REG[cls.__name__] = cls
    return cls

class Meta(type):
    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        REG[name] = cls

class Registry:
    def __init__(self):
        self.classes = {}

    def add(self, cls):
        self.classes[cls.__name__] = cls
        return cls

registry = Registry()
NESTED = {}

class Model:
    pass

def register_in(kind):
    def deco(cls):
        NESTED.setdefault(kind, {})[cls.__name__] = cls
        return cls
    return deco

INSTANCES = {}
BY_KIND = collections.defaultdict(list)
FUNCS = collections.OrderedDict()

def by_kind(kind):
    def deco(cls):
        BY_KIND[kind].append(cls)
        return cls
    return deco

def func(fn):
    FUNCS[fn.__name__] = fn
    return fn

def register_instance(cls):
    INSTANCES[cls.__name__] = cls()
    return cls
"""

PLUGINS = """
import functools

from registry import F, Meta, Model, by_kind, func, register, register_in, register_instance, registry

@by_kind("math")
class Thirteen:
    def run(self, x):
        return x * 13

@func
def seventeen(x):
    return x * 17

@register_instance
class Elevens:
    def run(self, x):
        return x * 11

def get_k(self):
    return 8

def scale(self, k, x):
    return x * k

def install():
    Model.k = property(get_k)
    Model.scaled = functools.partialmethod(scale, 9)

install()

@F.fmt.register
def _(self, x: int):
    return x * 7

@register
class Doubler:
    def run(self, x):
        return x * 2

class Tripler(metaclass=Meta):
    def run(self, x):
        return x * 3

@registry.add
class Quad:
    def run(self, x):
        return x * 4

@register_in("math")
class Sixer:
    def run(self, x):
        return x * 6
"""

CHOSEN = """
class A:
    def run(self, x):
        return x * 2

class B:
    def run(self, x):
        return x * 3

IMPL = {"2": A, "3": B}[os.environ["K"]]
"""

# name: (the flow's head, what the step returns, the edit: (file, old, new), or None for K=2 -> K=3)
CASES: dict[str, tuple[str, str, tuple[str, str, str] | None]] = {
    "class_decorator": ("import plugins\nfrom registry import REG", 'REG["Doubler"]().run(x)', ("plugins.py", "x * 2", "x * 5")),
    "metaclass": ("import plugins\nfrom registry import REG", 'REG["Tripler"]().run(x)', ("plugins.py", "x * 3", "x * 5")),
    "registry_object": (
        "import plugins\nfrom registry import registry",
        'registry.classes["Quad"]().run(x)',
        ("plugins.py", "x * 4", "x * 5"),
    ),
    "nested_registry": (
        "import plugins\nfrom registry import NESTED",
        'NESTED["math"]["Sixer"]().run(x)',
        ("plugins.py", "x * 6", "x * 5"),
    ),
    # A property or a partialmethod another module sets on the class.
    "property_set_elsewhere": ("import plugins\nfrom registry import Model", "x * Model().k", ("plugins.py", "return 8", "return 5")),
    "partialmethod_set_elsewhere": (
        "import plugins\nfrom registry import Model",
        "Model().scaled(x)",
        ("plugins.py", "x * k", "x * k * 5"),
    ),
    "instance_registry": ("import plugins\nfrom registry import INSTANCES", 'INSTANCES["Elevens"].run(x)', ("plugins.py", "x * 11", "x * 5")),
    # A `defaultdict(list)` of classes, an `OrderedDict` of functions.
    "defaultdict_registry": (
        "import plugins\nfrom registry import BY_KIND",
        'BY_KIND["math"][0]().run(x)',
        ("plugins.py", "x * 13", "x * 5"),
    ),
    "ordered_registry": ("import plugins\nfrom registry import FUNCS", 'FUNCS["seventeen"](x)', ("plugins.py", "x * 17", "x * 5")),
    "dispatch_method": ("import plugins\nfrom registry import F", "F().fmt(x)", ("plugins.py", "x * 7", "x * 5")),
    "chosen_class": (CHOSEN, "IMPL().run(x)", None),
    # Two lambdas on one line: which one the helper is.
    "lambda_on_a_line": ('OPS = {"2": lambda x: x * 2, "3": lambda x: x * 3}\nOP = OPS[os.environ["K"]]', "OP(x)", None),
    "context_var": (
        'import contextvars\nCV = contextvars.ContextVar("cv", default=int(os.environ["K"]))',
        "x * CV.get()",
        None,
    ),
    "seed_in_main": (
        "import random\n\ndef main():\n    random.seed(1)\n\nmain()",
        "x + random.randint(0, 1000)",
        ("flow.py", "seed(1)", "seed(2)"),
    ),
    # Through a function it calls in turn, importing the library itself, under an `if`.
    "seed_deeper": (
        "import random\n\ndef setup():\n    import random as r\n    r.seed(1)\n\n"
        'def main():\n    setup()\n\nif __name__ != "__main__":\n    main()',
        "x + random.randint(0, 1000)",
        ("flow.py", "seed(1)", "seed(2)"),
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name, (head, reads, _) in CASES.items():
        for how in ("edited", "same"):
            folder = tmp_path_factory.mktemp(name)
            (folder / "flow.py").write_text(EDITED_FLOW.format(head=head, body=f"return {reads}"))
            (folder / "registry.py").write_text(REGISTRY)
            (folder / "plugins.py").write_text(PLUGINS)
            folders[f"{name}:{how}"] = folder

    def between(label: str, folder: Path) -> dict[str, str]:
        name, how = label.split(":")
        edit = CASES[name][2]
        if how == "edited" and edit is not None:
            path = folder / edit[0]
            path.write_text(path.read_text().replace(edit[1], edit[2]))
        return {"K": "3" if how == "edited" and edit is None else "2"}

    return twice(folders, RUN_FLOW, between, {"STOP": "1", "K": "2"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_the_statements_text_does_not_show_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[f"{name}:edited"])  # was `value 20` (the old output)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_value_replays(runs: dict[str, Any], name: str) -> None:
    first, count, second, after = runs[f"{name}:same"]
    assert "suspended" in first and count == ["s"], first
    assert "value" in second and after == ["s"], second
