"""Corpus for the golden-fingerprint test (tests/test_fingerprint_golden.py).

Every function here is fingerprinted on each CPython 3.10-3.13 present and
must give the value stored in fp_golden.json. It must stay parseable by 3.10
(no `except*`, no type parameters, no PEP 701 f-strings: those live in
fp_corpus_312.py). Never edit a function without regenerating the golden
file on purpose: `python tests/test_fingerprint_golden.py --update`.
"""

# ruff: noqa  (a corpus of odd but valid code, kept exactly as written)
from __future__ import annotations

import functools
import json
import os.path
import types

# A stand-in for the real package: the golden runner loads only
# durable._fingerprint.fingerprint, and our decorators must be ignored by name anyway.
durable = types.SimpleNamespace(
    step=lambda *a, **k: a[0] if a and callable(a[0]) else (lambda f: f)
)
durable.workflow = durable.step
step = workflow = durable.step

PROMPT = "Summarise the commit below in one line:\n"
THRESHOLD = 0.75
LIMITS = {"retries": (1, 2, 3), "tags": frozenset({"a", "b"}), "big": 10**60, "raw": b"\x00\xff"}
UNICODE = "caf\u00e9 \U0001fae8 \u2028"  # U+1FAE8 is Unicode 15: repr differs by version
NOT_PLAIN = object()


def fmt_width(x, w):
    return f"{x:{w}}"


def fmt_debug(x):
    return f"{x=}"


def fmt_conv_spec(x):
    return f"{x!r:>10}"


def fmt_debug_spaces_spec(x, w):
    return f"{x = !s:>{w}}"


def fmt_nested_quotes(d):
    return f"{d['k']}" + f"{d['k']}" + f"""{d["k"] + "x"}"""


def fmt_implicit_concat(x):
    return f"a{x}bc{x!a}d"


def fmt_nested_spec(x, w, p):
    return f"{x:{w}.{p}f}|{x:}|{x:%H:%M}|{{literal}}"


def fmt_multiline(x, y):
    return f"""
    {x + y}
    {x!s}"""


def fmt_raw_bytes(x):
    return rf"\d+{x}\n" + r"\w" + b"raw\x00".decode() + f"plain"


def literals():
    return (
        0x1F,
        1_000,
        1.5e-3,
        2j,
        123456789012345678901234567890,
        "u",
        b"b",
        ...,
        None,
        True,
        False,
        -1,
        +2,
        ~3,
        not 4,
        UNICODE,
        "\N{GREEK SMALL LETTER ALPHA}",
    )


def operators(a, b):
    a += b
    a -= b
    a *= b
    a /= b
    a //= b
    a %= b
    a **= b
    a <<= b
    a >>= b
    a &= b
    a |= b
    a ^= b
    return (
        a + b - a * b / a // b % a**b,
        a << b >> a,
        a & b | a ^ b,
        a < b <= a > b >= a == b != a,
        a is b,
        a is not b,
        a in b,
        a not in b,
        a and b or not a,
        a if b else -a,
    )


def matmul(a, b):
    a @= b
    return a @ b


def params(a, b=1, /, c=2, *args, d, e=THRESHOLD, **kwargs) -> dict[str, int]:
    return {"a": a, "b": b, "c": c, "args": args, "d": d, "e": e, **kwargs}


def annotated(x: int, y: "str | None" = None) -> list[int]:
    z: int = 3
    w: float
    return [x, z]


def control(items):
    """A docstring that never counts."""
    total = 0
    for i, item in enumerate(items):
        if i % 2:
            continue
        elif item is None:
            break
        else:
            total += item
    else:
        total -= 1
    while total > 100:
        total //= 2
    try:
        assert total >= 0, "negative"
    except (AssertionError, ValueError) as e:
        raise RuntimeError("bad") from e
    except Exception:
        pass
    else:
        total += 1
    finally:
        del items
    return total


def comprehensions(xs):
    return (
        [x for x in xs if x if not x % 3],
        {x for x in xs},
        {x: x for x in xs},
        (x for x in xs),
        [y for x in xs for y in range(x)],
        [(z := x) for x in xs],
    )


async def async_forms(src, lock):
    async with lock as held, lock:
        async for x in src:
            await x
    return [x async for x in src], held


def generator(xs):
    yield 1
    yield from xs
    x = yield
    return x


def matching(command):
    match command:
        case ["go", direction] | ["move", direction]:
            return direction
        case {"action": str(action), **rest}:
            return action, rest
        case Point(x=0, y=0) if command:
            return "origin"
        case [1, 2, *others]:
            return others
        case None | True:
            return "singleton"
        case "a" | b"b" | -1 | 1.5 | 2 + 3j as literal:
            return literal
        case _:
            return None


def scopes():
    counter = 0

    def bump():
        nonlocal counter
        counter += 1
        return counter

    global THRESHOLD
    return bump, lambda: (yield)


def slicing(s, i):
    return s[1:], s[:i], s[::2], s[1:i:-1], s[i, 1:2], s[...]


def starred(*a, **k):
    first, *rest = a
    return [*a, *rest], {**k}, print(*a, sep="", **k)


def calls(x):
    return json.dumps(x, indent=2), os.path.join("a", "b"), sorted(x, key=len)


def decorated_other():
    @functools.lru_cache(maxsize=None)
    @durable.step(retries=3)
    def inner(x):
        return x

    return inner


@durable.step(retries=3, name="n")
def ours_called(x):
    return x


@step
def ours_bare(x):
    return x


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


@logged
def others_decorator(x):
    return x


def quotes_compat(d, x):
    return f"{d['k'] + 'a'}{x!r}" + f"{x:{'w'}}"


def with_items(path):
    with open(path) as f, open(path) as g:
        return f.read() + g.read()


class Widget:
    """A class whose methods are fingerprinted through their qualname."""

    scale = 2

    def method(self, x):
        return x * self.scale

    @staticmethod
    def static(x):
        return x

    @classmethod
    def klass(cls, x):
        return cls.scale + x

    @property
    def prop(self):
        return super().__repr__()


def make_scaler(k):
    def scaled(v):
        return v * k

    return scaled


scale_two, scale_three = make_scaler(2), make_scaler(3)

double = lambda x: x * 2
pair_one, pair_two = (lambda x: x + 1), (lambda x: x + 2)


def uses_constants(text):
    return PROMPT + text if len(text) > THRESHOLD else LIMITS["retries"], NOT_PLAIN


def helper_leaf(x):
    return x * THRESHOLD


def helper_mid(x):
    return helper_leaf(x) + helper_cycle(x)


def helper_cycle(x):
    return helper_mid(x - 1) if x > 0 else 0


def uses_helpers(x):
    return helper_mid(x) + len(PROMPT)


class _Durable:
    """Stands for a step or workflow object: only its fingerprint counts."""

    __durable_fingerprint__ = "0123456789ab"

    def __call__(self, x):
        return helper_leaf(x)


a_step = _Durable()


def calls_step(x):
    return a_step(x) + helper_leaf(x)


def defaults_live(x, table=LIMITS, fn=helper_leaf, flag=None, *, limit=THRESHOLD):
    return x


# A path default: `pathlib._local.PosixPath` on 3.13, `pathlib.PosixPath` before (newuser55).
# (Imported here: a module-level `import pathlib` is read by `imports_in_body`.)
def path_defaults(x, out=__import__("pathlib").Path("o.csv"), pure=__import__("pathlib").PurePosixPath("a")):
    return out / x


partial_bound = functools.partial(params, 1, 2, d=(3, "four"))


def exotic():
    return ("\t\x00\U0010ffff\ud800"[1:], 1e308 * 10, -0.0, 0.1 + 0.2, 10**400)


# What a function reads besides its text: import statements (an alias
# re-pointed), a class's statements and the constants read through it,
# functions held in a dict, imports in the body.
from hashlib import md5 as digest_alias
import json as ser_alias
from pathlib import Path  # pathlib._local.Path on 3.13: the statement counts, not that


class Cfg:
    LIMIT = 3
    ITEMS = ["a"]


HANDLERS = {"leaf": helper_leaf, "mid": helper_mid}


def reads_aliases(x):
    return digest_alias(x).hexdigest(), ser_alias.dumps(x), Path(x)


def reads_class(xs):
    return xs[: Cfg.LIMIT], Cfg.ITEMS


def reads_container(kind, x):
    return HANDLERS[kind](x)


def imports_in_body(x):
    import textwrap
    from fp_corpus import helper_leaf as leaf

    return leaf(textwrap.dedent(x))


CASES = {
    name: (obj, {})
    for name, obj in list(globals().items())
    if isinstance(obj, types.FunctionType)
    and obj.__module__ == __name__
    and name not in ("step", "workflow", "quotes_compat")
}
CASES.update(
    {
        "Widget.method": (Widget.method, {}),
        "Widget.static": (Widget.static, {}),
        "Widget.klass": (Widget.klass, {}),
        "Widget.prop": (Widget.prop.fget, {}),
        "nested_inner": (decorated_other(), {}),
        "scale_two": (scale_two, {}),
        "scale_three": (scale_three, {}),
        "pair_one_named": (pair_one, {"name": "pair_one"}),
        "pair_two_named": (pair_two, {"name": "pair_two"}),
        "uses_helpers_shallow": (uses_helpers, {"deep": False}),
        "uses_helpers_versioned": (uses_helpers, {"version": "2024-06-01"}),
        "uses_helpers_named": (uses_helpers, {"name": "pinned.name"}),
        "partial_bound": (partial_bound, {}),
        "bound_method": (Widget().method, {}),
        "quotes_compat": (quotes_compat, {"name": "quotes"}),
    }
)
