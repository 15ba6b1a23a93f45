"""Edits that must keep a step's fingerprint and edits that must change it.

Each case is a module written to tmp_path, imported in a fresh interpreter,
edited on disk, then imported in another fresh interpreter. All cases share
two interpreter launches (one before, one after the edits) to stay fast;
the module names are distinct so nothing leaks between cases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint.fingerprint import describe_change

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "tests" / "fp_runner.py"

# Stands in for `import durable`: only the decorator *names* matter.
PRELUDE = """\
import functools, types
durable = types.SimpleNamespace()
durable.step = durable.workflow = lambda *a, **k: (
    a[0] if a and callable(a[0]) else (lambda f: f))
step = workflow = durable.step
"""

BASE = """
PROMPT = "Summarise:"
LIMIT = 3

@durable.step(retries=3)
def target(text, n=2):
    words = text.split()
    return PROMPT + " ".join(words[:n]) + f"{n:>3}" if len(words) < LIMIT else "long"
"""


@dataclass
class Case:
    id: str
    before: str
    after: str
    # None: the fingerprint must stay; else a phrase describe_change must say.
    change: str | None = None
    extra_before: dict[str, str] = field(default_factory=dict)  # sibling modules
    extra_after: dict[str, str] = field(default_factory=dict)


def edit(old: str, new: str, base: str = BASE) -> str:
    assert old in base, old
    return base.replace(old, new)


COSMETIC = [
    Case("spaces", BASE, edit("words[:n]", "words[ : n ]")),
    Case("indent-2", BASE, BASE.replace("\n    ", "\n  ")),
    Case("tabs", BASE, BASE.replace("\n    ", "\n\t")),
    Case("blank-lines", BASE, edit("    words =", "\n\n    words =")),
    Case(
        "comments",
        BASE,
        edit("    words = text.split()", "    # split\n    words = text.split()  # why"),
    ),
    Case("docstring-added", BASE, edit("n=2):\n", 'n=2):\n    """Summarise the text."""\n')),
    Case(
        "docstring-changed",
        edit("n=2):\n", 'n=2):\n    """One."""\n'),
        edit("n=2):\n", "n=2):\n    '''Two,\n    longer.'''\n"),
    ),
    Case(
        "line-wrapping",
        BASE,
        edit(
            'return PROMPT + " ".join(words[:n])',
            'return (PROMPT\n            + " ".join(\n                words[:n],\n            ))',
        ),
    ),
    Case("parentheses", BASE, edit("len(words) < LIMIT", "((len(words)) < (LIMIT))")),
    Case("quote-style", BASE, edit('" ".join', "' '.join")),
    Case("u-prefix", BASE, edit('"long"', 'u"long"')),
    Case("implicit-concat", BASE, edit('"long"', "\"lo\" 'ng'")),
    Case("fstring-without-fields", BASE, edit('"long"', 'f"long"')),
    Case("fstring-debug-spelling", edit('f"{n:>3}"', 'f"{n=}"'), edit('f"{n:>3}"', 'f"n={n!r}"')),
    Case("backslash-continuation", BASE, edit("return PROMPT +", "return PROMPT \\\n        +")),
    Case("number-spelling", edit("n=2)", "n=1000)"), edit("n=2)", "n=1_000)")),
    Case("trailing-comma", BASE, edit("(text, n=2)", "(\n    text,\n    n=2,\n)")),
    Case("crlf", BASE, BASE.replace("\n", "\r\n")),
    Case("moved-down", BASE, "\n\nUNRELATED = [1, 2]\n\n\ndef other():\n    return 1\n" + BASE),
    Case("our-decorator-args", BASE, edit("retries=3)", "retries=5, name='x')")),
    Case("our-decorator-form", BASE, edit("@durable.step(retries=3)", "@step")),
    Case("unrelated-constant", BASE + "OTHER = 1\n", BASE + "OTHER = 2\n"),
    Case(
        "semicolons",
        edit("    words = text.split()", "    a = 1; b = 2\n    words = text.split()"),
        edit("    words = text.split()", "    a = 1\n    b = 2\n    words = text.split()"),
    ),
]

HELPERS = (
    BASE.replace('"long"', "helper(text)")
    + """
def helper(text):
    return text.upper() + leaf(text)

def leaf(text):
    return text[::-1]
"""
)
FACTORY = """
def make(k):
    @durable.step
    def inner(x):
        return x * k
    return inner

target = make(2)
"""
CFG_USER = """
import MOD_cfg as cfg

@durable.step
def target(x):
    return x * cfg.SCALE
"""

# What a step reads besides its own text (README: "What a step reads").
ALIAS_FUNCTION = """
from hashlib import md5 as h

@durable.step
def target(text):
    return h(text.encode()).hexdigest()
"""
ALIAS_MODULE = """
import json as ser

@durable.step
def target(x):
    return ser.dumps(x)
"""
IMPORT_IN_BODY = """
@durable.step
def target(x):
    from MOD_helpers import clean
    import MOD_helpers as hp
    return clean(x) + hp.shout(x)
"""
HELPERS_BEFORE = {
    "helpers": "def clean(x):\n    return x.strip()\n\ndef shout(x):\n    return x.upper()\n"
}
CLASS_CONSTANT = """
class Cfg:
    LIMIT = 3

    def unrelated(self):
        return 1

@durable.step
def target(xs):
    return xs[: Cfg.LIMIT]
"""
HANDLERS = """
def parse_csv(text):
    return text.split(",")

def parse_tsv(text):
    return text.split("\\t")

HANDLERS = {"csv": parse_csv, "tsv": parse_tsv}
PIPELINE = [str.strip, parse_tsv]

@durable.step
def target(kind, text):
    for f in PIPELINE:
        text = f(text)
    return HANDLERS[kind](text)
"""
LIST_DEFAULT = """
DEFAULTS = ["a", "b"]
defaults = {"sep": ","}

@durable.step
def target(x, opts=DEFAULTS, *, more=defaults):
    return [x, *opts, more]
"""
READS = [
    Case(
        "import-alias-function",
        ALIAS_FUNCTION,
        ALIAS_FUNCTION.replace("md5", "sha256"),
        "global h changed",
    ),
    Case(
        "import-alias-module",
        ALIAS_MODULE,
        ALIAS_MODULE.replace("import json", "import pickle"),
        "global ser changed",
    ),
    Case(
        "import-in-body-function",
        IMPORT_IN_BODY,
        IMPORT_IN_BODY,
        "helper MOD_helpers.clean changed",
        HELPERS_BEFORE,
        {"helpers": HELPERS_BEFORE["helpers"].replace("strip", "lstrip")},
    ),
    Case(
        "import-in-body-module",
        IMPORT_IN_BODY,
        IMPORT_IN_BODY,
        "helper MOD_helpers.shout changed",
        HELPERS_BEFORE,
        {"helpers": HELPERS_BEFORE["helpers"].replace("upper", "lower")},
    ),
    Case(
        "class-constant",
        CLASS_CONSTANT,
        CLASS_CONSTANT.replace("LIMIT = 3", "LIMIT = 4"),
        "constant Cfg.LIMIT changed",
    ),
    Case(
        "class-method-edited",
        CLASS_CONSTANT,
        CLASS_CONSTANT.replace("return 1", "return 2"),
        "global Cfg changed",
    ),
    Case(
        "function-in-a-dict",
        HANDLERS,
        HANDLERS.replace('split(",")', 'split(";")'),
        "helper MOD.parse_csv changed",
    ),
    Case(
        "function-in-a-list",
        HANDLERS,
        HANDLERS.replace("[str.strip, parse_tsv]", "[str.lstrip, parse_tsv]"),
        "global PIPELINE changed",
    ),
    Case(
        "list-default",
        LIST_DEFAULT,
        LIST_DEFAULT.replace('"b"]', '"c"]'),
        "global DEFAULTS changed",
    ),
    Case(
        "dict-default-lowercase",
        LIST_DEFAULT,
        LIST_DEFAULT.replace('{"sep": ","}', '{"sep": ";"}'),
        "global defaults changed",
    ),
]

# What a name's binding statements depend on counts too (each of these once
# replayed a stale value: the statement itself was unchanged).
FROM_IMPORT = """
from MOD_consts import ITEMS

@durable.step
def target(x):
    return x + sum(ITEMS)
"""
IMPORT_IN_BODY_LIST = """
@durable.step
def target(x):
    from MOD_consts import ITEMS
    return x + sum(ITEMS)
"""
STAR_IMPORT = FROM_IMPORT.replace("import ITEMS", "import *")
TRY_IMPORT = FROM_IMPORT.replace(
    "from MOD_consts import ITEMS", "try:\n    from MOD_consts import ITEMS\nexcept ImportError:\n    ITEMS = []"
)
CONSTS = {"consts": "ITEMS = [1, 2]\n"}
EDITED_CONSTS = {"consts": "ITEMS = [1, 5]\n"}
IF_BLOCK = """
if 1 > 0:
    ITEMS = [1]
else:
    ITEMS = [5]

@durable.step
def target(x):
    return x + sum(ITEMS)
"""
DERIVED = """
BASE = [1, 2]
ALL = BASE + [3]

@durable.step
def target(x):
    return x + sum(ALL)
"""
ENUM_MEMBER = """
import enum

class Color(enum.Enum):
    RED = 1

DEFAULT = Color.RED

@durable.step
def target(x):
    return x + DEFAULT.value
"""
GLOBAL_REBOUND = """
K = 1

def setup():
    global K
    K = 2

setup()

@durable.step
def target(x):
    return x + K
"""
CHANGED_BY_A_FUNCTION = """
CFG = {}

def init():
    CFG["k"] = 5

init()

@durable.step
def target(x):
    return x + CFG["k"]
"""
PASSED_TO_A_CALL = """
VALUES = []

def fill(xs):
    xs.append(5)

fill(VALUES)

@durable.step
def target(x):
    return x + sum(VALUES)
"""
# Changed through another name bound to its object or a part of it, or by a
# call whose result is bound: `CFG` keeps its own statements as they were.
THROUGH_AN_ALIAS = """
import contextlib

CFG = {"k": 1, "m": [1], "n": [1], "w": 1}
MODEL = CFG
MODEL["k"] = 2
PART = CFG["m"]
PART.append(2)
for part in CFG.values():
    if isinstance(part, list):
        part.append(2)
with contextlib.nullcontext(CFG) as held:
    held["w"] = 2

@durable.step
def target(x):
    return x + CFG["k"] + sum(CFG["m"]) + sum(CFG["n"]) + CFG["w"]
"""
CHANGED_BY_A_BOUND_CALL = PASSED_TO_A_CALL.replace("fill(VALUES)", "filled = fill(VALUES)")
# Filled by a call of a function that changes it: the call's arguments
# decide the value (a plugin registry's decorator, a class keyword).
FILLED_BY_CALLS = """
WEIGHTS = {}
KINDS = {}

def register(weight):
    def decorate(fn):
        WEIGHTS[fn.__name__] = weight
        return fn
    return decorate

def setup(kind):
    remember("setup", kind)

def remember(key, value):
    KINDS[key] = value

class Plugin:
    def __init_subclass__(cls, weight=1):
        WEIGHTS[cls.__name__] = weight

@register(2)
def scale(x):
    return x

class Doubler(Plugin, weight=2):
    pass

setup("fast")

@durable.step
def target(x):
    return x * WEIGHTS["scale"] * WEIGHTS["Doubler"], KINDS["setup"]
"""
# Values that differ from process to process, read by a binding statement:
# the statement counts, never the value (else no run could be resumed).
FROM_THE_CLOCK = """
import os, time
START = time.time()
WORKER = os.getpid()
STATS = {"started": START, "worker": WORKER}

@durable.step
def target(x):
    return x, STATS
"""
REBOUND_ELSEWHERE = """
import MOD_config as config
config.set_debug()

@durable.step
def target(x):
    return x, config.DEBUG
"""
# A module that defines its own `print`: a call of it may change its argument.
OWN_PRINT = """
VALUES = []

def print(xs):
    xs.append(5)

print(VALUES)

@durable.step
def target(x):
    return x + sum(VALUES)
"""
REBOUND_BY_GLOBALS = """
DATA = [1, 2]
globals()["DATA"] = [7, 8]
LIMIT = [1]
(LIMIT := [3])

@durable.step
def target(x):
    return x + sum(DATA) + sum(LIMIT)
"""
# A step that finds a module by name at run time: its own through
# `sys.modules[__name__]`, another through `importlib.import_module`.
SELF_LOOKUP = """
import sys

def shout(text):
    return text.upper()

@durable.step
def target(x):
    return getattr(sys.modules[__name__], "shout")(x)
"""
FRAME_LOOKUP = SELF_LOOKUP.replace(
    'getattr(sys.modules[__name__], "shout")', 'sys._getframe().f_globals["shout"]'
)
# What the factory set on the function it made (`inner.k = 1`).
FACTORY_ATTRIBUTE = """
def make():
    def inner(x):
        return x
    inner.k = 1
    return inner

scale = make()

@durable.step
def target(x):
    return scale(x) * scale.k
"""
# A helper's docstring, which the step reads (a tool's description).
DOC_READ = """
import inspect

def shout(text):
    \"\"\"Shout the text.\"\"\"
    return text.upper()

@durable.step
def target(x):
    return inspect.getdoc(shout) + x, shout.__doc__
"""
# A decorator that reads the docstring (`@tool` gives it to an LLM).
DOC_BY_DECORATOR = """
def describe(fn):
    return {"description": fn.__doc__, "run": fn}

@describe
def search(q):
    \"\"\"Search the web.\"\"\"
    return q

@durable.step
def target(x):
    return search["description"] + x
"""
# A factory's step that captured a class (or a module) of another module:
# counted by its name there, the old output came back (found by hunt12).
FACTORY_OF_A_CLASS = """
import MOD_models

def make(kind):
    @durable.step
    def made(x):
        return kind().predict(x)
    return made

target = make(MOD_models.Model)
"""
FACTORY_OF_A_MODULE = FACTORY_OF_A_CLASS.replace("kind()", "kind.Model()").replace(
    "make(MOD_models.Model)", "make(MOD_models)"
)
MODELS = {"models": "class Model:\n    def predict(self, x):\n        return x * 2\n"}
EDITED_MODELS = {"models": MODELS["models"].replace("x * 2", "x * 3")}
# A bound method of an object of another module's class, bound to a name
# or captured by a factory: `score` calls `self.base`, which the edit changes.
BOUND_METHOD = """
import MOD_models

score = MOD_models.Scorer().score

@durable.step
def target(x):
    return score(x)
"""
BOUND_IN_A_FACTORY = FACTORY_OF_A_CLASS.replace("kind()", "kind").replace(
    "make(MOD_models.Model)", "make(MOD_models.Scorer().score)"
)
SCORERS = {
    "models": "class Scorer:\n    def score(self, x):\n        return self.base(x)\n\n"
    "    def base(self, x):\n        return x * 2\n"
}
EDITED_SCORERS = {"models": SCORERS["models"].replace("x * 2", "x * 3")}
IMPORT_BY_NAME = """
import importlib

@durable.step
def target(x):
    return importlib.import_module("MOD_helpers").clean(x)
"""
CLEANER = {"helpers": "def clean(x):\n    return x.strip()\n"}
# A name relative to a package another constant names (found by hunt12: only
# the package's `__init__` counted, and the old output came back).
IMPORT_RELATIVE = IMPORT_BY_NAME.replace('"MOD_helpers"', '".fast", package="MOD_pkg"')
IN_PACKAGE = {"pkg/__init__": "", "pkg/fast": CLEANER["helpers"]}
CONFIG = {"config": "DEBUG = False\n\ndef set_debug():\n    global DEBUG\n    DEBUG = True\n"}
FOLLOWED = [
    # Found by name at run time, the module counts whole (as `globals()`).
    Case(
        "own-module-found-through-sys-modules",
        SELF_LOOKUP,
        SELF_LOOKUP.replace("text.upper()", "text.lower()"),
        "helper MOD.shout changed",
    ),
    Case(
        "own-module-found-through-a-frame",
        FRAME_LOOKUP,
        FRAME_LOOKUP.replace("text.upper()", "text.lower()"),
        "helper MOD.shout changed",
    ),
    Case(
        "an-attribute-a-factory-sets-on-its-function",
        FACTORY_ATTRIBUTE,
        FACTORY_ATTRIBUTE.replace("inner.k = 1", "inner.k = 2"),
        "helper MOD.make changed",
    ),
    Case(
        "a-docstring-the-step-reads",
        DOC_READ,
        DOC_READ.replace("Shout the text.", "Shout it."),
        "doc shout changed",
    ),
    Case(
        "a-docstring-a-decorator-reads",
        DOC_BY_DECORATOR,
        DOC_BY_DECORATOR.replace("the web", "the intranet"),
        "global search changed",
    ),
    Case(
        "a-docstring-no-step-reads",
        DOC_READ.replace("inspect.getdoc(shout) + x, shout.__doc__", "shout(x)"),
        DOC_READ.replace("inspect.getdoc(shout) + x, shout.__doc__", "shout(x)").replace(
            "Shout the text.", "Shout it."
        ),
    ),
    Case(
        "module-found-by-import-module",
        IMPORT_BY_NAME,
        IMPORT_BY_NAME,
        "helper MOD_helpers.clean changed",
        CLEANER,
        {"helpers": CLEANER["helpers"].replace("strip", "lower")},
    ),
    Case(
        "a-class-a-factory-captured",
        FACTORY_OF_A_CLASS,
        FACTORY_OF_A_CLASS,
        "global MOD.MOD_models.Model changed",
        MODELS,
        EDITED_MODELS,
    ),
    Case(
        "a-module-a-factory-captured",
        FACTORY_OF_A_MODULE,
        FACTORY_OF_A_MODULE,
        "module MOD.MOD_models changed",
        MODELS,
        EDITED_MODELS,
    ),
    Case(
        "a-bound-method-of-an-object",
        BOUND_METHOD,
        BOUND_METHOD,
        "global MOD.MOD_models.Scorer changed",
        SCORERS,
        EDITED_SCORERS,
    ),
    Case(
        "a-bound-method-a-factory-captured",
        BOUND_IN_A_FACTORY,
        BOUND_IN_A_FACTORY,
        "global MOD.MOD_models.Scorer changed",
        SCORERS,
        EDITED_SCORERS,
    ),
    Case(
        "module-found-by-a-relative-name",
        IMPORT_RELATIVE,
        IMPORT_RELATIVE,
        "helper MOD_pkg.fast.clean changed",
        IN_PACKAGE,
        {**IN_PACKAGE, "pkg/fast": CLEANER["helpers"].replace("strip", "lower")},
    ),
    Case(
        "own-module-found-by-name-comment-added",
        SELF_LOOKUP,
        SELF_LOOKUP.replace("    return text.upper()", "    # louder\n    return text.upper()"),
    ),
    # The module-level call decides `config.DEBUG` as much as config's own
    # statements: removing it makes the step return False, not True.
    Case(
        "rebound-in-another-module-by-a-call-here",
        REBOUND_ELSEWHERE,
        REBOUND_ELSEWHERE.replace("config.set_debug()\n", ""),
        "no longer uses global config",
        CONFIG,
        CONFIG,
    ),
    Case(
        "from-import-list",
        FROM_IMPORT,
        FROM_IMPORT,
        "global MOD_consts.ITEMS changed",
        CONSTS,
        EDITED_CONSTS,
    ),
    Case(
        "import-in-body-list",
        IMPORT_IN_BODY_LIST,
        IMPORT_IN_BODY_LIST,
        "global MOD_consts.ITEMS changed",
        CONSTS,
        EDITED_CONSTS,
    ),
    Case(
        "star-import-list",
        STAR_IMPORT,
        STAR_IMPORT,
        "global MOD_consts.ITEMS changed",
        CONSTS,
        EDITED_CONSTS,
    ),
    Case(
        "try-import-list",
        TRY_IMPORT,
        TRY_IMPORT,
        "global MOD_consts.ITEMS changed",
        CONSTS,
        EDITED_CONSTS,
    ),
    Case(
        "changed-in-place-by-a-function",
        CHANGED_BY_A_FUNCTION,
        CHANGED_BY_A_FUNCTION.replace('] = 5', '] = 6'),
        "global CFG changed",
    ),
    Case(
        "passed-to-a-call",
        PASSED_TO_A_CALL,
        PASSED_TO_A_CALL.replace("append(5)", "append(6)"),
        "helper MOD.fill changed",  # `fill(VALUES)` binds VALUES: what it reads counts
    ),
    Case(
        "passed-to-a-call-bound-to-a-name",
        CHANGED_BY_A_BOUND_CALL,
        CHANGED_BY_A_BOUND_CALL.replace("append(5)", "append(6)"),
        "helper MOD.fill changed",
    ),
    Case(
        "filled-by-a-decorator-argument",
        FILLED_BY_CALLS,
        FILLED_BY_CALLS.replace("@register(2)", "@register(3)"),
        "global WEIGHTS changed",
    ),
    Case(
        "filled-by-a-class-keyword",
        FILLED_BY_CALLS,
        FILLED_BY_CALLS.replace("weight=2)", "weight=3)"),
        "global WEIGHTS changed",
    ),
    Case(
        "filled-by-a-call-of-a-function-that-changes-it",
        FILLED_BY_CALLS,
        FILLED_BY_CALLS.replace('setup("fast")', 'setup("slow")'),
        "global KINDS changed",
    ),
    Case(
        "changed-through-an-alias",
        THROUGH_AN_ALIAS,
        THROUGH_AN_ALIAS.replace('MODEL["k"] = 2', 'MODEL["k"] = 3'),
        "global CFG changed",
    ),
    Case(
        "changed-through-a-part",
        THROUGH_AN_ALIAS,
        THROUGH_AN_ALIAS.replace("PART.append(2)", "PART.append(3)"),
        "global CFG changed",
    ),
    Case(
        "changed-through-a-loop-variable",
        THROUGH_AN_ALIAS,
        THROUGH_AN_ALIAS.replace("part.append(2)", "part.append(3)"),
        "global CFG changed",
    ),
    Case(
        "changed-through-a-with-target",
        THROUGH_AN_ALIAS,
        THROUGH_AN_ALIAS.replace('held["w"] = 2', 'held["w"] = 3'),
        "global CFG changed",
    ),
    Case(
        "passed-to-its-own-print",
        OWN_PRINT,
        OWN_PRINT.replace("append(5)", "append(6)"),
        "helper MOD.print changed",
    ),
    Case(
        "rebound-through-globals",
        REBOUND_BY_GLOBALS,
        REBOUND_BY_GLOBALS.replace("[7, 8]", "[7, 9]"),
        "global DATA changed",
    ),
    Case(
        "bound-by-a-walrus",
        REBOUND_BY_GLOBALS,
        REBOUND_BY_GLOBALS.replace("[3]", "[4]"),
        "global LIMIT changed",
    ),
    Case("if-test", IF_BLOCK, IF_BLOCK.replace("1 > 0", "1 < 0"), "global ITEMS changed"),
    Case("derived-global", DERIVED, DERIVED.replace("[1, 2]", "[1, 7]"), "global MOD.BASE changed"),
    Case(
        "enum-value",
        ENUM_MEMBER,
        ENUM_MEMBER.replace("RED = 1", "RED = 7"),
        "constant DEFAULT changed",
    ),
    Case(
        "rebound-by-a-function",
        GLOBAL_REBOUND,
        GLOBAL_REBOUND.replace("K = 2", "K = 9"),
        "global K changed",
    ),
]

# A step that calls a helper filling a list is no statement of that list:
# the call runs when the step does, not when the module is loaded.
SIBLINGS = """
EXECUTED = []

def announce(name):
    EXECUTED.append(name)

@durable.step
def other(x):
    announce("other")
    return x + 1

@durable.step
def target(x):
    announce("target")
    return x
"""
# `frame.eval(...)` (pandas) is a method, not the builtin that reads any
# global of the module: the module does not count as a whole.
EVAL_METHOD = """
def unrelated(y):
    return y + 1

@durable.step
def target(frame):
    return frame.eval("a + 1"), frame.globals()
"""
# A command-line dispatcher that only looks names up in `globals()` (or
# asks it for its keys) binds none: its edit is no statement of `RATES`.
CLI_DISPATCH = """
RATES = [1, 2]

@durable.step
def target(x):
    return x + RATES[0]

def cli(argv):
    if argv[1] not in globals() or argv[1] not in globals().keys():
        return sorted(globals().keys())
    return globals()[argv[1]](int(argv[2]))
"""
# `**vars(args)` passes a copy of what an object holds: it binds no name,
# and an edit of the script's command line is no statement of `RATES`.
ARGPARSE_MAIN = """
import argparse
RATES = [1, 2]

@durable.step
def target(x):
    return x + RATES[0]

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("x", type=int, help="how many")
    print(target(**vars(parser.parse_args())))
"""
# Iterating `globals()` (a notebook cell listing what is defined) gives names.
LISTS_GLOBALS = """
RATES = [1, 2]

@durable.step
def target(x):
    return x + RATES[0]

DEFINED = [k for k in globals() if not k.startswith("_")]
"""
# One that stores into it (`globals()[name] = ...`) may bind any name.
GLOBALS_WRITER = """
RATES = [1, 2]

def load(values):
    globals()["RATES"] = values
    g = globals()
    g.update(LIMIT=values)

@durable.step
def target(x):
    return x + RATES[0]
"""
# A plugin registry that class statements fill (found by hunt14): the step
# names the base only, and an edited subclass's method replayed the old output.
SUBCLASSES = """
class Plugin:
    def run(self, x):
        return x

class Double(Plugin):
    def run(self, x):
        return x * 2

class Other:
    def run(self, x):
        return -x

@durable.step
def target(x):
    return [c().run(x) for c in Plugin.__subclasses__()]
"""
PLUGINS_ELSEWHERE = """
from MOD_plugins import Plugin

@durable.step
def target(x):
    return [c().run(x) for c in Plugin.__subclasses__()]
"""
PLUGINS = {"plugins": SUBCLASSES.split("class Other")[0]}
LISTS_ITS_OWN = PLUGINS_ELSEWHERE.replace(
    "return [c().run(x) for c in Plugin.__subclasses__()]", "return Plugin.run_all(x)"
)
RUN_ALL = "\n    @classmethod\n    def run_all(cls, x):\n        return [c().run(x) for c in cls.__subclasses__()]\n"
REGISTERED = PLUGINS_ELSEWHERE.replace("Plugin.__subclasses__()", "Plugin.registry.values()")
REGISTRY = {
    "plugins": PLUGINS["plugins"].replace(
        "class Plugin:\n",
        "class Plugin:\n    registry = {}\n\n    def __init_subclass__(cls):\n"
        "        Plugin.registry[cls.__name__] = cls\n\n",
    )
}
OWN_PLUGINS = {"plugins": PLUGINS["plugins"].replace("        return x\n", "        return x\n" + RUN_ALL, 1)}
TRIPLE = "\nclass Triple(Double):\n    def run(self, x):\n        return x * 3\n"

READS_KEPT = [
    Case(
        "a-class-beside-the-listed-ones-edited",
        SUBCLASSES,
        SUBCLASSES.replace("return -x", "return -x - 1"),
    ),
    Case("a-sibling-step-edited", SIBLINGS, SIBLINGS.replace("x + 1", "x + 2")),
    Case("a-dispatcher-edited", CLI_DISPATCH, CLI_DISPATCH.replace("int(argv", "float(argv")),
    Case("a-command-line-edited", ARGPARSE_MAIN, ARGPARSE_MAIN.replace("many", "many items")),
    Case("a-listing-edited", LISTS_GLOBALS, LISTS_GLOBALS.replace('"_"', '"__"')),
    Case("an-eval-method-edited-elsewhere", EVAL_METHOD, EVAL_METHOD.replace("y + 1", "y + 2")),
    Case("derived-from-the-clock", FROM_THE_CLOCK, FROM_THE_CLOCK),
    # `config.DEBUG` counts by config's statements, never its value: the
    # same text is the same fingerprint in every process (a step calling
    # `config.set_debug()` as it runs changes nothing).
    Case("rebound-in-another-module", REBOUND_ELSEWHERE, REBOUND_ELSEWHERE, None, CONFIG, CONFIG),
    Case(
        "binding-reformatted",
        LIST_DEFAULT,
        LIST_DEFAULT.replace(
            'DEFAULTS = ["a", "b"]', 'DEFAULTS = [\n    "a",  # first\n    "b",\n]'
        ),
    ),
    Case("unrelated-import-added", ALIAS_MODULE, "import os\n" + ALIAS_MODULE),
]

SEMANTIC = [
    Case(
        "a-listed-subclass-edited",
        SUBCLASSES,
        SUBCLASSES.replace("x * 2", "x * 5"),
        "global Plugin.__subclasses__:MOD.Double changed",
    ),
    Case(
        "a-listed-subclass-edited-in-another-module",
        PLUGINS_ELSEWHERE,
        PLUGINS_ELSEWHERE,
        "global Plugin.__subclasses__:MOD_plugins.Double changed",
        PLUGINS,
        {"plugins": PLUGINS["plugins"].replace("x * 2", "x * 5")},
    ),
    Case(
        "a-subclass-its-classmethod-lists-edited",
        LISTS_ITS_OWN,
        LISTS_ITS_OWN,
        "helper MOD_plugins.Plugin.run_all changed",
        OWN_PLUGINS,
        {"plugins": OWN_PLUGINS["plugins"].replace("x * 2", "x * 5")},
    ),
    Case(
        "a-registered-subclass-edited",
        REGISTERED,
        REGISTERED,
        "global Plugin.registry:MOD_plugins.Double changed",
        REGISTRY,
        {"plugins": REGISTRY["plugins"].replace("x * 2", "x * 5")},
    ),
    Case(
        "a-subclass-of-a-listed-subclass-added",
        SUBCLASSES,
        SUBCLASSES.replace("class Other", TRIPLE + "\nclass Other"),
        "now uses global Plugin.__subclasses__:MOD.Triple",
    ),
    Case(
        "a-globals-writer",
        GLOBALS_WRITER,
        GLOBALS_WRITER.replace("= values\n", "= values[::-1]\n"),
        "global RATES changed",
    ),
    Case(
        "a-globals-lookup-changed-in-place",
        GLOBALS_WRITER,
        GLOBALS_WRITER.replace("    g = globals()\n", '    globals()["RATES"].append(3)\n    g = {}\n'),
        "global RATES changed",
    ),
    Case(
        "vars-of-the-module-written",
        GLOBALS_WRITER,
        GLOBALS_WRITER.replace("    g = globals()\n", "    g = vars(sys.modules[__name__])\n").replace(
            "RATES = [1, 2]", "import sys\nRATES = [1, 2]"
        ).replace("LIMIT=values", "RATES=values[::-1]"),
        "global RATES changed",
    ),
    Case(
        "a-globals-writer-through-a-name",
        GLOBALS_WRITER,
        GLOBALS_WRITER.replace("LIMIT=values", "RATES=values[::-1]"),
        "global RATES changed",
    ),
    Case("operator", BASE, edit("PROMPT +", "PROMPT *"), "code changed"),
    Case("comparison", BASE, edit("< LIMIT", "<= LIMIT"), "code changed"),
    Case("int-literal", BASE, edit("words[:n]", "words[:n + 1]"), "code changed"),
    Case("str-literal", BASE, edit('"long"', '"too long"'), "code changed"),
    Case("default-value", BASE, edit("n=2)", "n=3)"), "code changed"),
    Case("parameter-added", BASE, edit("n=2)", "n=2, sep=' ')"), "code changed"),
    Case("parameter-kind", BASE, edit("(text, n=2)", "(text, *, n=2)"), "code changed"),
    Case(
        "parameter-renamed",
        BASE,
        edit("(text, n=2)", "(body, n=2)").replace("text.split", "body.split"),
        "code changed",
    ),
    Case("async", BASE, edit("def target", "async def target"), "code changed"),
    Case(
        "yield",
        BASE,
        edit("    words = text.split()", "    yield\n    words = text.split()"),
        "code changed",
    ),
    Case(
        "other-decorator",
        BASE,
        edit("@durable.step(retries=3)", "@durable.step(retries=3)\n@functools.lru_cache"),
        "code changed",
    ),
    Case("called-name", BASE, edit("text.split()", "text.rsplit()"), "code changed"),
    Case("called-function", BASE, edit("len(words)", "sum(words)"), "code changed"),
    Case("fstring-spec", BASE, edit("{n:>3}", "{n:<3}"), "code changed"),
    Case("fstring-conversion", edit("{n:>3}", "{n!r}"), edit("{n:>3}", "{n!s}"), "code changed"),
    Case(
        "statement-order",
        edit("    words =", "    n = n + 1\n    words ="),
        edit("    return", "    n = n + 1\n    return"),
        "code changed",
    ),
    Case(
        "constant-value",
        BASE,
        edit('"Summarise:"', '"Summarise briefly:"'),
        "constant PROMPT changed",
    ),
    Case("constant-number", BASE, edit("LIMIT = 3", "LIMIT = 4"), "constant LIMIT changed"),
    Case(
        "helper-body",
        HELPERS,
        HELPERS.replace("text.upper()", "text.lower()"),
        "helper MOD.helper changed",
    ),
    Case(
        "transitive-helper", HELPERS, HELPERS.replace("[::-1]", "[::2]"), "helper MOD.leaf changed"
    ),
    Case("closure-value", FACTORY, FACTORY.replace("make(2)", "make(3)"), "closure values changed"),
    Case(
        "default-from-constant",
        BASE.replace("n=2", "n=LIMIT"),
        BASE.replace("n=2", "n=LIMIT").replace("LIMIT = 3", "LIMIT = 4"),
        "default values changed",
    ),
    Case(
        "partial-bound",
        BASE + "CASES = {'target': (functools.partial(target, n=2), {})}\n",
        BASE + "CASES = {'target': (functools.partial(target, n=5), {})}\n",
        "bound arguments changed",
    ),
    Case(
        "module-attribute-constant",
        CFG_USER,
        CFG_USER,
        "constant cfg.SCALE changed",
        {"cfg": "SCALE = 2\n"},
        {"cfg": "SCALE = 3\n"},
    ),
    Case(
        "version",
        BASE + "OPTIONS = {'version': '1'}\n",
        BASE + "OPTIONS = {'version': '2'}\n",
        "version changed ('1' -> '2')",
    ),
]

OPTIONS = [
    # deep=False: a helper edit is not seen...
    Case(
        "shallow-helper-edit",
        HELPERS + "OPTIONS = {'deep': False}\n",
        HELPERS.replace("text.upper()", "text.lower()") + "OPTIONS = {'deep': False}\n",
    ),
    # ...but a constant still is.
    Case(
        "shallow-constant-edit",
        BASE + "OPTIONS = {'deep': False}\n",
        edit("LIMIT = 3", "LIMIT = 4") + "OPTIONS = {'deep': False}\n",
        "constant LIMIT changed",
    ),
    # version= replaces the source: a semantic edit is the user's to flag.
    Case(
        "versioned-code-edit",
        BASE + "OPTIONS = {'version': '1'}\n",
        edit("PROMPT +", "PROMPT *") + "OPTIONS = {'version': '1'}\n",
    ),
    # name= pins the identity: renaming the function changes nothing.
    Case(
        "named-rename",
        BASE + "OPTIONS = {'name': 'summarise'}\n",
        BASE.replace("def target", "def summarise_v2")
        + "target = summarise_v2\nOPTIONS = {'name': 'summarise'}\n",
    ),
    # name= equal to the function's own name is no name= at all.
    Case("name-equal-to-default", BASE, BASE + "OPTIONS = {'name': 'target'}\n"),
    Case(
        "helper-moved",
        HELPERS,
        BASE.replace('"long"', "helper(text)").replace(
            "PROMPT = ",
            "def leaf(text):\n    return text[::-1]\n\ndef helper(text):\n"
            "    return text.upper() + leaf(text)\n\nPROMPT = ",
        ),
    ),
]

ALL = COSMETIC + SEMANTIC + OPTIONS + READS + READS_KEPT + FOLLOWED


def module_name(case: Case) -> str:
    return "m_" + case.id.replace("-", "_")


def write_case(root: Path, case: Case, source: str, extra: dict[str, str]) -> None:
    mod = module_name(case)
    for name, text in extra.items():
        path = root / f"{mod}_{name}.py"
        path.parent.mkdir(exist_ok=True)  # `pkg/fast`: a package's module
        path.write_text(text)
    text = PRELUDE + source.replace("MOD_", mod + "_")
    (root / f"{mod}.py").write_bytes(text.encode())  # bytes: keep CRLF as written


def fingerprint_modules(root: Path) -> dict[str, Any]:
    mods = [module_name(c) for c in ALL]
    done = subprocess.run(
        [sys.executable, "-I", "-B", str(RUNNER), str(REPO), str(root), *mods],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Any]]:
    root = tmp_path_factory.mktemp("edits")
    for case in ALL:
        write_case(root, case, case.before, case.extra_before)
    before = fingerprint_modules(root)
    for case in ALL:  # edited in place, as a user would
        write_case(root, case, case.after, case.extra_after)
    after = fingerprint_modules(root)
    return {c.id: (before[module_name(c)]["target"], after[module_name(c)]["target"]) for c in ALL}


def check(case: Case, results: dict[str, tuple[Any, Any]]) -> None:
    old, new = results[case.id]
    assert "value" in old and "value" in new, (old, new)
    said = describe_change(old["parts"], new["parts"])
    if case.change is None:
        assert old["value"] == new["value"], said
        assert said == "no change"
    else:
        assert old["value"] != new["value"]
        assert case.change.replace("MOD", module_name(case)) in said, said


@pytest.mark.parametrize("case", COSMETIC, ids=lambda c: c.id)
def test_cosmetic_edit_keeps_fingerprint(case: Case, results: dict[str, tuple[Any, Any]]) -> None:
    check(case, results)


@pytest.mark.parametrize("case", SEMANTIC, ids=lambda c: c.id)
def test_semantic_edit_changes_fingerprint(case: Case, results: dict[str, tuple[Any, Any]]) -> None:
    check(case, results)


@pytest.mark.parametrize("case", OPTIONS, ids=lambda c: c.id)
def test_options_edit(case: Case, results: dict[str, tuple[Any, Any]]) -> None:
    check(case, results)


@pytest.mark.parametrize("case", READS + READS_KEPT, ids=lambda c: c.id)
def test_what_a_step_reads(case: Case, results: dict[str, tuple[Any, Any]]) -> None:
    check(case, results)


@pytest.mark.parametrize("case", FOLLOWED, ids=lambda c: c.id)
def test_what_a_binding_statement_depends_on(
    case: Case, results: dict[str, tuple[Any, Any]]
) -> None:
    check(case, results)


def test_enough_cases() -> None:
    assert len(COSMETIC) >= 15 and len(SEMANTIC) >= 15


# ---------------------------------------------------------------- identity

SCRIPT = (
    PRELUDE
    + """
import json, os

@durable.step(retries=1)
def target(x):
    return x + 1

if __name__ == "__main__" or os.environ.get("FP_PRINT"):
    from durable._fingerprint.fingerprint import fingerprint_function
    opts = json.loads(os.environ.get("FP_OPTIONS", "{}"))
    fp = fingerprint_function(target, **opts)
    print(json.dumps({"value": fp.value, "identity": fp.identity}))
"""
)


def run_script(args: list[str], cwd: Path, home: Path, **env: str) -> dict[str, str]:
    """Runs with the real package importable through PYTHONPATH, as a user would."""
    full = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "PYTHONDONTWRITEBYTECODE": "1",
        **env,
    }
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    names = ("first", "second/deeper", "cwd1", "cwd2", "home1", "home2")
    dirs = {n: tmp_path / n for n in names}
    for d in dirs.values():
        d.mkdir(parents=True)
    for n in ("first", "second/deeper"):
        (dirs[n] / "pipeline.py").write_text(SCRIPT)
    return dirs


def test_script_identity_ignores_folder_path_and_home(places: dict[str, Path]) -> None:
    a = run_script([str(places["first"] / "pipeline.py")], places["cwd1"], places["home1"])
    b = run_script([str(places["second/deeper"] / "pipeline.py")], places["cwd2"], places["home2"])
    c = run_script(["pipeline.py"], places["first"], places["home2"])  # relative path
    assert a["identity"] == "pipeline.target"  # the module `import` gives the file
    assert a == b == c


def test_dash_m_names_the_module_main_too(places: dict[str, Path]) -> None:
    as_script = run_script([str(places["first"] / "pipeline.py")], places["cwd1"], places["home1"])
    as_module = run_script(["-m", "pipeline"], places["first"], places["home2"])
    assert as_module == as_script


def test_imported_module_and_script_are_one_identity(places: dict[str, Path]) -> None:
    # A script is identified by the module an import gives it (`scriptnames.importable`):
    # imported or started as a script, the same code, the same fingerprint.
    imported = ["-c", "import pipeline"]
    script = [str(places["first"] / "pipeline.py")]
    plain_import = run_script(imported, places["first"], places["home1"], FP_PRINT="1")
    plain_script = run_script(script, places["cwd1"], places["home1"])
    assert plain_import["identity"] == plain_script["identity"] == "pipeline.target"
    assert plain_import["value"] == plain_script["value"]
