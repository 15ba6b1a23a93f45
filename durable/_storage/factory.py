"""Opening a store: a local folder, any fsspec URL, or a user's own key
store. It sits above the implementations, which know nothing of each other."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._calls import at_callers
from .._settings import setting, when_configured
from ..errors import ConfigurationError
from .base import Store
from .local import LocalStore

if TYPE_CHECKING:
    from .recordlog import KeyStore


@at_callers
def open_store(
    url: str | os.PathLike[str] | KeyStore | None = None, **options: Any
) -> Store:
    """Open a store: a local folder, any fsspec URL, or your own backend (an
    object with the `durable.KeyStore` methods: get, get_many, put, create,
    list, delete). The default is `durable.configure(store=...)`, else
    `$DURABLE_STORE`, else `./.durable`.

    Store options: `signing_key` (default `$DURABLE_SIGNING_KEY`): HMAC-sign
    and verify every record; `allow_pickle=False` (or
    `DURABLE_ALLOW_PICKLE=0`, which wins): refuse pickled values;
    `blob_threshold` (bytes, 1 MiB): larger outputs are stored once under
    `blobs/<sha256>`; `lease_ttl` (seconds): how long a dead holder's lease
    on an object store blocks a run; `durability` (`"fsync"`, the default,
    `"batch"` or `"none"`; default `durable.configure(durability=)`, else
    `$DURABLE_DURABILITY`) and
    `sync_interval` (seconds, 1.0, for `"batch"`): when a local run log is
    fdatasync'ed (under `"fsync"`: how often a sync marks what it covered;
    see docs/storage.md). Every other option goes to fsspec, e.g.
    `endpoint_url=`, `key=`, `secret=`, `client_kwargs=` for s3fs."""
    if url is not None and not isinstance(url, (str, os.PathLike, Store)):
        from .keystore import BackendStore  # a user's own key store: its module loaded for it

        return BackendStore(url, **options)
    target = url if isinstance(url, Store) else setting("store", url)
    if isinstance(target, Store):  # an open store, or durable.configure(store=a_store)
        if options:
            raise ConfigurationError(
                f"the store {target.url} is already open; options "
                f"({', '.join(options)}) apply when a store is opened: pass its URL instead"
            )
        return target
    if "://" not in target or target.startswith("file://"):
        folder = target.removeprefix("file://")  # `file:///srv/runs` is the folder /srv/runs
        _not_a_broken_url(folder)
        return _opened(LocalStore(folder, **options))
    from .objects import FsspecStore, filesystem_class  # fsspec, loaded for URL stores only

    _filesystem_available(target, filesystem_class)
    return _opened(FsspecStore(target, **options))


# The stores this process opened, by address: a child run's link to the
# store of its parent (or a parent's to its child's) is followed through
# the store opened with its options (endpoint, credentials, signing key).
_OPEN: weakref.WeakValueDictionary[str, Store] = weakref.WeakValueDictionary()


def _opened(store: Store) -> Store:
    _OPEN[store.address()] = store
    return store


def store_at(address: str) -> Store:
    """The store at `address` (`Store.address`): the one this process has
    open there, else opened afresh (with the `DURABLE_*` settings). A
    backend of the user's own (named by its class) cannot be opened again."""
    found = _OPEN.get(address)
    if found is not None:
        return found
    if "://" not in address and not os.path.isabs(address):
        raise ConfigurationError(f"no store is open at {address!r} here, and it names no folder or URL")
    return open_store(address)


def _filesystem_available(url: str, filesystem_class: Callable[[str], object]) -> None:
    """A misspelt protocol or a package not installed is this machine's
    setup, not a failing store: said as such (exit 2), with the fix."""
    for protocol in url.partition("://")[0].split("::"):  # `simplecache::s3://...`
        try:
            filesystem_class(protocol)
        except ImportError as e:
            missing = getattr(e.__cause__, "name", None)
            install = (
                "pip install 'durable-fn[s3]', or pip install s3fs"
                if missing == "s3fs"
                else f"pip install {missing}"
            )
            what = f"{missing} is not installed ({install})" if missing else str(e)
            raise ConfigurationError(
                f"store {url} cannot be opened here: {what}. Nothing was read or written."
            ) from None
        except ValueError:
            raise ConfigurationError(
                f"store {url} cannot be opened: fsspec knows no protocol {protocol!r} (a typo? "
                "s3://bucket/path, gs://bucket/path, memory://name, or a local folder's path). "
                "Nothing was read or written."
            ) from None


def _not_a_broken_url(target: str) -> None:
    """`s3:/bucket` (a slash missing) would be a local folder named `s3:`:
    the records would stay on this machine while the team looks in S3. A
    Windows drive (`C:/runs`) has a one-letter scheme and is a folder."""
    scheme, colon, rest = target.partition(":")
    if colon and len(scheme) > 1 and rest.startswith("/") and scheme.isascii() and (
        scheme[0].isalpha() and all(c.isalnum() or c in "+.-" for c in scheme)
    ):
        raise ConfigurationError(
            f"store {target!r} looks like a URL with a slash missing "
            f"({scheme}://{rest.lstrip('/')}): write a URL as {scheme}://..., or a "
            f"folder with that name as ./{target}. Nothing was opened"
        )


# Stores a plain cached call opened, by what `open_store` reads: the
# configured store, the variables below (their raw values) and the working
# folder. Looked up on every cached plain call, so the variables are read
# from the environment's own dict: `os.environ.get` encodes the name and
# decodes the value on each call, several times the cost of the lookup.
_ENV = ("DURABLE_STORE", "DURABLE_SIGNING_KEY", "DURABLE_ALLOW_PICKLE")
_ENVIRON = type(os.environ)
_RAW_KEYS = tuple(os.environ.encodekey(k) for k in _ENV)
_stores: dict[tuple[Any, ...], Store] = {}
_generation = [0]  # how many times `configure()` changed a setting


def _count(_name: str) -> None:
    _generation[0] += 1


when_configured(_count)


def default_store() -> Store:
    """The store a plain call caches in: the configured one (`configure`,
    `$DURABLE_STORE`, else `./.durable`), opened once per configuration,
    working folder and value of the variables `open_store` reads (setting
    `DURABLE_ALLOW_PICKLE=0` later is obeyed)."""
    env = os.environ
    raw = getattr(env, "_data", None) if type(env) is _ENVIRON else None
    if raw is not None:  # spelled out: a `map` over the names costs twice as much
        get, (named, signing, pickle) = raw.get, _RAW_KEYS
        key: tuple[Any, ...] = (_generation[0], get(named), get(signing), get(pickle))
    else:  # os.environ replaced, or without its dict: read it as it is
        key = (_generation[0], None, *map(env.get, _ENV))
    if _absolute[0] == key:  # the working folder cannot change which store it is
        return _absolute[1]  # type: ignore[no-any-return]
    slot = (*key, os.getcwd())
    store = _stores.get(slot)
    if store is None:
        target = setting("store")
        store = target if isinstance(target, Store) else open_store(target)
        if len(_stores) >= 64:  # a process that keeps changing its folder
            _stores.clear()
        _stores[slot] = store
        if not _relative(target):
            _absolute[:] = [key, store]
    return store


# The last configuration whose store is named without the working folder (a
# URL, an absolute path, an open store), and that store: its hit needs no
# `getcwd`.
_absolute: list[Any] = [None, None]


def _relative(target: object) -> bool:
    if not isinstance(target, str):
        return False
    folder = target.removeprefix("file://")
    return ("://" not in target or target.startswith("file://")) and not os.path.isabs(
        os.path.expanduser(folder)
    )
