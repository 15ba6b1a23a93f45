"""The 46th new-user walk, in the library: the preview of a large output
(`durable show`, `history()`) hashes its blob once, as the content address
its verified record names, and a damaged blob is still said as damaged."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage.history import history

SIZE = 300_000  # over the blob threshold below: a blob


def _run(store: durable.Store, counts: Counter[str]) -> None:
    @durable.step(name="make")
    def make() -> bytes:
        counts["make"] += 1
        return b"x" * SIZE

    @durable.workflow(name="big", store=store, run_id="b1")
    def big() -> int:
        return len(make())

    assert big() == SIZE


@pytest.mark.parametrize("key", [None, "k"])
def test_a_large_output_is_hashed_once_to_preview_it(
    key: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: its blob was hashed twice (the content address, then the
    envelope's own SHA-256, which the address covers) and its body copied:
    1.5 s of the 7 `durable show` took over 300 MB of outputs."""
    counts: Counter[str] = Counter()
    store = durable.open_store(tmp_path / "s", blob_threshold=4096, signing_key=key)
    _run(store, counts)
    hashed: list[int] = []
    real = hashlib.sha256

    def counting(data: Any = b"", **kw: Any) -> Any:
        if len(data) >= SIZE:
            hashed.append(len(data))
        h = real(data, **kw)
        return _Counted(h, hashed)

    monkeypatch.setattr(hashlib, "sha256", counting)
    [step] = _steps(durable.open_store(tmp_path / "s", signing_key=key))
    monkeypatch.undo()
    assert step.preview is not None and step.preview.startswith("b'xxx") and step.output_size >= SIZE
    assert len(hashed) == 1, hashed
    assert counts == {"make": 1}


def _steps(store: durable.Store) -> list[Any]:
    return [s for s in history(store, "big", "b1") if s.name == "make"]


class _Counted:
    def __init__(self, h: Any, hashed: list[int]) -> None:
        self.h, self.hashed = h, hashed

    def update(self, data: Any) -> None:
        if len(data) >= SIZE:
            self.hashed.append(len(data))
        self.h.update(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.h, name)


def test_a_damaged_blob_is_still_said_as_damaged(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    store = durable.open_store(tmp_path / "s", blob_threshold=4096)
    _run(store, counts)
    [blob] = [p for p in (tmp_path / "s").rglob("*") if p.is_file() and p.stat().st_size > SIZE]
    data = blob.read_bytes()
    blob.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    [step] = _steps(durable.open_store(tmp_path / "s"))
    assert step.preview is not None and "damaged or missing" in step.preview, step.preview
