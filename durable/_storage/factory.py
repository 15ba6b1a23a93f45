"""Opening a store: a local folder, any fsspec URL, or a user's own key
store. It sits above the implementations, which know nothing of each other."""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigurationError
from .base import Store
from .keystore import BackendStore
from .local import LocalStore
from .objects import FsspecStore
from .recordlog import KeyStore


def open_store(
    url: str | os.PathLike[str] | KeyStore | None = None, **options: Any
) -> Store:
    """Open a store: a local folder, any fsspec URL, or your own backend (an
    object with the `durable.KeyStore` methods: get, get_many, put, create,
    list, delete). The default is `$DURABLE_STORE`, else `./.durable`.

    Store options: `signing_key` (default `$DURABLE_SIGNING_KEY`): HMAC-sign
    and verify every record; `allow_pickle=False` (or
    `DURABLE_ALLOW_PICKLE=0`, which wins): refuse pickled values;
    `blob_threshold` (bytes, 1 MiB): larger outputs are stored once under
    `blobs/<sha256>`; `lease_ttl` (seconds): how long a dead holder's lease
    on an object store blocks a run. Every other option goes to fsspec, e.g.
    `endpoint_url=`, `key=`, `secret=`, `client_kwargs=` for s3fs."""
    if isinstance(url, Store):
        if options:
            raise ConfigurationError(
                f"{url!r} is already open: options are given when a store is opened"
            )
        return url
    if url is not None and not isinstance(url, (str, os.PathLike)):
        return BackendStore(url, **options)
    target = os.fspath(url) if url is not None else os.environ.get("DURABLE_STORE", ".durable")
    if "://" not in target or target.startswith("file://"):
        return LocalStore(target.removeprefix("file://"), **options)
    return FsspecStore(target, **options)


# Stores a plain cached call opened, by location and signing key.
_stores: dict[tuple[str | None, str, str | None], Store] = {}


def default_store() -> Store:
    """The store a plain call caches in: `$DURABLE_STORE`, else `./.durable`
    (opened once per location and signing key)."""
    env = os.environ
    slot = (env.get("DURABLE_STORE"), os.getcwd(), env.get("DURABLE_SIGNING_KEY"))
    store = _stores.get(slot)
    if store is None:
        store = _stores[slot] = open_store()
    return store
