"""Opening a store: a local folder or any fsspec URL. It sits above the
two implementations, which know nothing of each other."""

from __future__ import annotations

import os
from typing import Any

from .base import Store
from .local import LocalStore
from .objects import FsspecStore


def open_store(url: str | os.PathLike[str] | None = None, **options: Any) -> Store:
    """Open a store: a local folder or any fsspec URL. The default is
    `$DURABLE_STORE`, else `./.durable`.

    Store options: `signing_key` (default `$DURABLE_SIGNING_KEY`): HMAC-sign
    and verify every record; `allow_pickle=False` (or
    `DURABLE_ALLOW_PICKLE=0`, which wins): refuse pickled values;
    `blob_threshold` (bytes, 1 MiB): larger outputs are stored once under
    `blobs/<sha256>`; `lease_ttl` (seconds): how long a dead holder's lease
    on an object store blocks a run. Every other option goes to fsspec, e.g.
    `endpoint_url=`, `key=`, `secret=`, `client_kwargs=` for s3fs."""
    target = os.fspath(url) if url is not None else os.environ.get("DURABLE_STORE", ".durable")
    if "://" not in target or target.startswith("file://"):
        return LocalStore(target.removeprefix("file://"), **options)
    return FsspecStore(target, **options)


# Stores a plain cached call opened, by working folder and the variables
# `open_store` reads (location, signing key, pickle policy).
_ENV = ("DURABLE_STORE", "DURABLE_SIGNING_KEY", "DURABLE_ALLOW_PICKLE")
_stores: dict[tuple[str | None, ...], Store] = {}


def default_store() -> Store:
    """The store a plain call caches in: `$DURABLE_STORE`, else `./.durable`
    (opened once per working folder and value of those variables: setting
    `DURABLE_ALLOW_PICKLE=0` later is obeyed)."""
    env = os.environ
    slot = (os.getcwd(), *[env.get(k) for k in _ENV])
    store = _stores.get(slot)
    if store is None:
        store = _stores[slot] = open_store()
    return store
