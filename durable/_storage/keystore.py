"""A store over a user's own backend: any object with the primitive key-store
methods (`recordlog.KeyStore`, public as `durable.KeyStore`). Everything
else, manifests, records, blobs and the run lease, is built from those
primitives exactly as on S3: one object per record, and an `ObjectLease`
whose only need is an atomic create-only write and a fresh listing."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..errors import ConfigurationError, DurableError, StorageError
from .base import STORE_OPTIONS, Store
from .keys import lease_key
from .lease import LEASE_TTL, Lease
from .objectlease import ObjectLease
from .recordlog import KeyStore

T = TypeVar("T")
METHODS = ("get", "get_many", "put", "create", "list", "delete")


class BackendStore(Store):
    """A Store whose primitives are the backend's; see the module docstring."""

    def __init__(self, backend: KeyStore, **options: Any) -> None:
        missing = [m for m in METHODS if not callable(getattr(backend, m, None))]
        if missing:
            raise ConfigurationError(
                f"{type(backend).__name__} is not a key store: it lacks "
                f"{', '.join(missing)}. A backend implements {', '.join(METHODS)} "
                "(see durable.KeyStore), or pass a path or fsspec URL instead."
            )
        unknown = set(options) - set(STORE_OPTIONS)
        if unknown:
            raise ConfigurationError(
                f"a store over your own backend takes only the options "
                f"{', '.join(STORE_OPTIONS)}, not {', '.join(sorted(unknown))}"
            )
        super().__init__(_name_of(backend), **options)
        self.backend = backend
        self.renew_every = (self.lease_ttl or LEASE_TTL) / 3  # as `ObjectLease` renews

    def _call(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        """Call the backend; its own exceptions become a StorageError naming
        the store, so the engine's handling (and the user's) is one."""
        try:
            return fn(*args)
        except DurableError:
            raise
        except Exception as e:
            raise StorageError(self.url, f"{what}: {type(e).__name__}: {e}") from e

    def get(self, key: str) -> bytes | None:
        data = self._call(f"reading {key}", self.backend.get, key)
        return None if data is None else self._bytes(f"get({key!r})", data)

    def get_many(self, keys: builtins.list[str]) -> dict[str, bytes]:
        if not keys:
            return {}
        got = self._call(f"reading {len(keys)} keys", self.backend.get_many, builtins.list(keys))
        asked = set(keys)
        out = {}
        for key, data in dict(got).items():
            if key not in asked:  # a wrong answer must never pass for a record
                raise StorageError(self.url, f"get_many returned {key!r}, which was not asked for")
            out[key] = self._bytes(f"get_many(...)[{key!r}]", data)
        return out

    def put(self, key: str, data: bytes) -> None:
        self._call(f"writing {key}", self.backend.put, key, bytes(data))

    def create(self, key: str, data: bytes) -> bool:
        made = self._call(f"creating {key}", self.backend.create, key, bytes(data))
        if not isinstance(made, bool):
            # A None from a backend that forgot to answer would read as
            # "lost the race" forever, or as a win it never had.
            raise StorageError(
                self.url, f"create({key!r}) returned {made!r}: it must return True or False"
            )
        return made

    def list(self, prefix: str) -> builtins.list[str]:
        keys = self._call(f"listing {prefix or '/'}", self.backend.list, prefix)
        return sorted(k for k in keys if k.startswith(prefix))

    def delete(self, keys: Iterable[str]) -> None:
        keys = builtins.list(keys)
        if keys:
            self._call(f"deleting {len(keys)} keys", self.backend.delete, keys)

    def lease(self, workflow: str, run_id: str, ttl: float) -> Lease:
        return ObjectLease(self, lease_key(workflow, run_id) + "/", ttl, run_id)

    def _bytes(self, what: str, data: object) -> bytes:
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
        raise StorageError(
            self.url, f"{what} returned {type(data).__name__}: it must return bytes"
        )


def _name_of(backend: object) -> str:
    """What messages call the store: the backend's `url` if it has one."""
    url = getattr(backend, "url", None)
    if isinstance(url, str) and url:
        return url
    kind = type(backend)
    return f"{kind.__module__}.{kind.__qualname__}"
