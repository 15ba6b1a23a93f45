"""What a step that looks modules up by name (`import_module`,
`sys.modules[name]`) costs and counts. Every check of its memoised
fingerprint asks again, for each string of its code and of the data it
reads, whether a module of that name exists: a name that is none was
looked for four times (its file, whether it does work at import, its
package, its import); and the keys of `sys.modules` itself, the finder,
were taken for the step's data, so a step reading `sys.modules[__name__]`
counted whatever loaded modules of the user's the first 200 keys named
(any module's edit a change), where it looks up its own."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from durable._fingerprint.fingerprint import fingerprint_function
from durable._fingerprint.memo import memo_fingerprint

LOOKS_UP = """
import importlib

MODS = {%s}

def target(x):
    return importlib.import_module(MODS["k0"]).run(x)
"""


def test_a_string_naming_no_module_is_looked_for_once_a_memo_check(
    load: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    load("r44plug0", "def run(x):\n    return x * 7\n")
    entries = [f'"k{i}": "r44none{i}"' for i in range(1, 40)] + ['"k0": "r44plug0"']
    mod = load("r44lookups", LOOKS_UP % ", ".join(entries))
    memo_fingerprint(mod.target)
    memo_fingerprint(mod.target)  # the modules the first one imported: loaded now
    real, asked = importlib.util.find_spec, []

    def counting(name: str, package: str | None = None) -> Any:
        asked.append(name)
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", counting)
    memo_fingerprint(mod.target)
    none = [n for n in asked if n.startswith("r44none")]
    assert sorted(none) == sorted(f"r44none{i}" for i in range(1, 40))  # was each four times


def test_a_step_finding_its_own_module_by_name_counts_no_other(load: Any) -> None:
    other = load("r44other", "def unrelated(x):\n    return x\n")
    mod = load("r44self", 'import sys\n\ndef shout(t):\n    return t.upper()\n\n'
               'def target(x):\n    return getattr(sys.modules[__name__], "shout")(x)\n')  # fmt: skip
    parts = fingerprint_function(mod.target).parts
    assert other.__name__ not in " ".join(parts), sorted(parts)
