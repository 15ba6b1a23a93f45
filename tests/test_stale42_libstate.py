"""Which statements of a function a module-level statement calls count as
setting a library's state (`libstate._run_at_import`): a seed, a store into
the library, a call named for setting something; not the rest of what a
script's `main()` calls (`json.dump(out, f)`), whose edit would otherwise
refuse every step reading that library."""

from __future__ import annotations

import ast
from typing import Any

from durable._fingerprint.libstate import library_state

MAIN = """
import json, os, random, time

def setup():
    import decimal
    decimal.getcontext().prec = 5
    os.environ["TZ"] = "UTC"
    time.tzset()

def main():
    random.seed(1)
    setup()
    json.dump({}, open(os.devnull, "w"))
    os.path.join("a", "b")

if __name__ == "__main__":  # counted as run at import; not run here (this process's state stays)
    main()

def never():
    random.seed(2)
"""


def _texts(state: list[Any]) -> list[str]:
    return [ast.unparse(s) for s in state]


def test_what_a_function_called_at_import_sets_counts_and_nothing_else(load: Any) -> None:
    namespace = vars(load("flow42", MAIN))
    assert _texts(library_state(namespace, "random")) == ["random.seed(1)"]  # not never()'s
    assert _texts(library_state(namespace, "decimal")) == ["decimal.getcontext().prec = 5"]
    assert _texts(library_state(namespace, "time")) == ["time.tzset()"]
    assert _texts(library_state(namespace, "os")) == ["os.environ['TZ'] = 'UTC'"]
    assert library_state(namespace, "json") == []  # json.dump in main() sets nothing
