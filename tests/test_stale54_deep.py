"""What nothing can tell counts as changed (fail closed), never as the
fingerprint's crash nor as unchanged: a global nested deeper than the
recursion limit (a linked list of 5,000 dicts a module-level loop builds,
or a statement then changes in place), and an object of a class whose
`__dict__` property raises, held where its contents count."""

from __future__ import annotations

from typing import Any

import pytest

from durable._fingerprint.fingerprint import fingerprint_function

DEEP = {
    "looped": """
        HEAD = None
        for i in range(5000):
            HEAD = {"next": HEAD, "v": i}
    """,
    "changed_in_place": """
        def build(n):
            head = None
            for i in range(n):
                head = {"next": head, "v": i}
            return head

        HEAD = build(5000)
        HEAD["v"] = -1
    """,
}


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_a_global_nested_past_the_recursion_limit_counts_as_changed(load: Any, kind: str) -> None:
    source = DEEP[kind] + """
        def s(x):
            n, node = 0, HEAD
            while node is not None:
                n, node = n + 1, node["next"]
            return x + n
    """
    m = load("deep54_" + kind, source)
    first, second = fingerprint_function(m.s), fingerprint_function(m.s)
    assert first.value != second.value  # told by nothing: changed, each time it is asked


ODD = """
    class Params:
        def __init__(self):
            object.__setattr__(self, "_d", {})

        @property
        def __dict__(self):
            raise RuntimeError("no dict here")

        def set(self, k, v):
            self._d[k] = v

    PARAMS = Params()
    PARAMS.set("lr", 0.1)
    STILL = Params()

    def s(x):
        return x * PARAMS._d["lr"]

    def t(x):
        return x, STILL
"""


def test_an_object_whose_dict_property_raises_counts_as_changed_not_a_crash(load: Any) -> None:
    m = load("odd54", ODD)
    # Changed by a module-level call, its contents count: none can be read, so changed.
    assert fingerprint_function(m.s).value != fingerprint_function(m.s).value
    # Only held (its class searched for what it holds): read as `object` keeps it, the same.
    assert fingerprint_function(m.t).value == fingerprint_function(m.t).value
