"""A step calling a method of a global object of the user's class that
changes `self` (`MEMORY.remember(x)` doing `self.items.append(x)`,
`ACC.push(x)` doing `self.count += x`), another step reading what it
changed (`MEMORY.total()`, `sum(MEMORY.items)`): resumed in a new process,
the first replayed without its change and the second read the object the
import made (value 0 for 5). Now a write of the attributes the methods
change: the resume is a changed call. An object making a client on first
use (`self._client = self._client or Client()`) or keeping a memo (`if k
not in self._memo: self._memo[k] = ...`) fills what a fresh one fills
again alike: its resume goes on (value 0, the read's own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import said, write_read, write_then_read

pytestmark = pytest.mark.slow  # two processes

CLASS = '''
import json

def record(obj, x):
    obj.items.append(x)

class Client:
    n = 0

class Store:
    def __init__(self):
        self.items = []
        self.count = 0
        self.keyed = {}
        self._client = None
        self._lazy = None
        self._memo = {}

    def remember(self, x):
        self.items.append(x)

    def total(self):
        return sum(self.items)

    def push(self, x):
        self.count += x

    def put(self, x):
        self.keyed["k"] = x

    def lookup(self, k):
        return self.keyed.get(k, 0)

    def client(self):
        self._client = self._client or Client()
        return self._client

    def fetch(self, x):
        return self.client().n * x

    def lazy(self, x):
        if self._lazy is None:
            self._lazy = Client()
        return self._lazy.n * x

    def handed(self, x):
        record(self, x)

    def call(self, x):  # reads its url and itself whole, fills its session once
        return len(json.dumps(self.url)) * 0 + self.lazy(x) + len(repr(self)) * 0

    url = "https://example.org"

    def half(self, k):
        if k not in self._memo:
            self._memo[k] = k // 2 - k // 2
        return self._memo[k]
'''

CASES = {
    "remember": ("STORE.remember(x)", "STORE.total()"),
    "items": ("STORE.remember(x)", "sum(STORE.items)"),
    "push": ("STORE.push(x)", "STORE.count"),
    "put": ("STORE.put(x)", 'STORE.lookup("k")'),
    "handed": ("STORE.handed(x)", "STORE.total()"),  # `self` handed whole: may change any
}
# Filled alike by any process: no refusal.
SAME = {
    "client": ("STORE.fetch(x)", "STORE.fetch(1)"),
    "lazy": ("STORE.lazy(x)", "STORE.lazy(1)"),
    "memo": ("STORE.half(x)", "STORE.half(5)"),
    "call": ("STORE.call(x)", "STORE.call(1)"),
}



def test_a_method_changing_a_global_object_is_a_write_but_a_lazy_client_or_memo_is_not(tmp_path: Path) -> None:
    head = f"import os\nimport durable\n{CLASS}\nSTORE = Store()\n"
    modules = {f"obj63_{n}": write_read(head, n, w, r) for n, (w, r) in {**CASES, **SAME}.items()}  # a module each
    second = write_then_read(tmp_path, modules)
    # Was: value 0 for each of CASES (the import's fresh object, the change replayed away).
    assert second.split() == said([f"obj63_{n}" for n in CASES], [f"obj63_{n}" for n in SAME]), second
