"""A key store over a folder, shared by processes: an object store (its
lease, its create-only writes) that the tests' children open through
`durable.open_store(Folder(path))`, without moto."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


class Folder:
    """Keys as files under `root`; `create` is atomic and only where absent,
    as an object store's conditional PUT is."""

    def __init__(self, root: str | Path) -> None:
        self.root = str(root)

    def _path(self, key: str) -> str:
        return os.path.join(self.root, *key.split("/"))

    def get(self, key: str) -> bytes | None:
        try:
            with open(self._path(key), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        return {k: v for k in keys if (v := self.get(k)) is not None}

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)

    def create(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            fd = os.open(path + ".new", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return False
        os.write(fd, data)
        os.close(fd)
        try:  # whole, and only where absent: a reader never sees it half written
            os.link(path + ".new", path)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(path + ".new")

    def list(self, prefix: str) -> list[str]:
        found = []
        for folder, _, files in os.walk(self.root):
            rel = os.path.relpath(folder, self.root).replace(os.sep, "/")
            found += [n if rel == "." else f"{rel}/{n}" for n in files if not n.endswith((".tmp", ".new"))]
        return sorted(k for k in found if k.startswith(prefix))

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            try:
                os.unlink(self._path(key))
            except FileNotFoundError:
                pass
