"""The durability level each write of a local store is made under: a
run's own level while an attempt holds it (`LocalStore.open_run`), else
the store's. A run's blobs follow it: under "none" nothing of the run is
synced, its outputs over the blob threshold neither (docs/storage.md)."""

from __future__ import annotations

import os

from .base import SHARED_BLOBS
from .localfs import local_error
from .log import NOFOLLOW, fsync_dir


class RunLevels:
    """What `LocalStore` decides its syncs by (a mixin: its fields are the store's)."""

    durability: str
    _levels: dict[tuple[str, str], str]
    root: str
    url: str

    def level_of(self, run: tuple[str, str] | None) -> str:
        return self.durability if run is None else self._levels.get(run, self.durability)

    def syncs(self, key: str) -> bool:
        """Whether a write of `key` is synced: a run's blob
        (`<workflow>/<run>/blobs/<sha256>`) as its run's level says; anything
        else as before, always: a cache entry and the cache's blobs answer
        runs of every level (a run under "fsync" recording a hit names the
        cache's blob), and the other objects are markers a removal or a
        cancel relies on."""
        parts = key.split("/")  # the cache's area is "cache/", a name no workflow may have
        if len(parts) != 4 or parts[2] != "blobs" or parts[0] == SHARED_BLOBS[0]:
            return True
        return self.level_of((parts[0], parts[1])) != "none"

    def kept(self, key: str) -> None:
        """A blob a write found already there, whole: an earlier attempt of
        the run may have written it under "none", unsynced; a level that
        syncs syncs it before a record names it (a power loss would take
        it from under a record that level promises)."""
        if not self.syncs(key):
            return
        path = os.path.join(self.root, key)
        try:
            fd = os.open(path, os.O_RDONLY | NOFOLLOW)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            fsync_dir(os.path.dirname(path))
        except OSError as e:
            raise local_error(self.url, f"syncing {key}", e) from e
