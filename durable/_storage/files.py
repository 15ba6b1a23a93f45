"""Files and folders as durable records them: a description (kind, size,
mtime, content digest) of a local path or any fsspec URL, and the state of
a recorded one now (present, missing, changed). Steps record artifacts with
it (`_core.artifacts`); history shows their state without the engine."""

from __future__ import annotations

import datetime
import hashlib
import os
from collections.abc import Iterable
from typing import Any

from .._frozen import Frozen, dataclass
from ..errors import StorageError
from .base import Store

_CHUNK = 1 << 20


def normalise(path: str | os.PathLike[str]) -> str:
    """A URL stays a URL; a local path becomes absolute, so that a change of
    working directory between two calls does not turn into "missing"."""
    text = os.fspath(path)
    if "://" in text and not text.startswith("file://"):
        return text.rstrip("/")
    local = os.path.abspath(os.path.expanduser(text.removeprefix("file://")))
    return local.rstrip(os.sep) or os.sep


def display(url: str) -> str:
    """The URL as a person reads it: local paths under the cwd are relative."""
    if "://" in url:
        return url
    rel = os.path.relpath(url)
    return url if rel.startswith("..") else rel


# -- describing and checking ----------------------------------------------


@dataclass(frozen=True)
class _Entry(Frozen):
    """A file of an artifact: its path in it, its size, its mtime."""

    rel: str
    size: int
    mtime: float | None


class _Local:
    """Local paths stay on plain `os`: fast, and no fsspec cache to go stale."""

    def stat(self, path: str) -> tuple[str, int, float | None] | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        kind = "folder" if os.path.isdir(path) else "file"
        return kind, st.st_size if kind == "file" else 0, st.st_mtime

    def walk(self, path: str) -> list[_Entry]:
        out: list[_Entry] = []
        self._scan(path, "", out, frozenset({os.path.realpath(path)}))
        return sorted(out, key=lambda e: e.rel)

    def _scan(self, folder: str, prefix: str, out: list[_Entry], above: frozenset[str]) -> None:
        # scandir hands back the stat it already has: one syscall per file.
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    self._scan(entry.path, rel + "/", out, above)
                elif entry.is_symlink() and entry.is_dir():
                    # A folder linked in holds the artifact's content as a file
                    # linked in does (followed): passed over, a change there was
                    # never seen. One into a folder walked already is counted there.
                    real = os.path.realpath(entry.path)
                    if not any(real == a or real.startswith(a + os.sep) for a in above):
                        self._scan(entry.path, rel + "/", out, above | {real})
                elif entry.is_file():
                    st = entry.stat()
                    out.append(_Entry(rel, st.st_size, st.st_mtime))

    def sha256(self, path: str, rel: str = "") -> str:
        h = hashlib.sha256()
        with open(os.path.join(path, rel) if rel else path, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
        return h.hexdigest()


class _Remote:
    """Any fsspec filesystem, with its listing cache dropped before each look
    (another process may have written or deleted the object)."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def stat(self, path: str) -> tuple[str, int, float | None] | None:
        self.fs.invalidate_cache(path)
        try:
            info = self.fs.info(path)
        except FileNotFoundError:
            return None
        if info.get("type") == "directory":
            return "folder", 0, _mtime(info)
        return "file", int(info.get("size") or 0), _mtime(info)

    def walk(self, path: str) -> list[_Entry]:
        found = self.fs.find(path, detail=True, withdirs=False)
        root = self.fs._strip_protocol(path).rstrip("/")
        out = []
        for name, info in found.items():
            rel = self.fs._strip_protocol(name)[len(root) + 1 :]
            out.append(_Entry(rel, int(info.get("size") or 0), _mtime(info)))
        return sorted(out, key=lambda e: e.rel)

    def sha256(self, path: str, rel: str = "") -> str:
        h = hashlib.sha256()
        with self.fs.open(f"{path.rstrip('/')}/{rel}" if rel else path, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
        return h.hexdigest()


def _mtime(info: dict[str, Any]) -> float | None:
    # Backends name it differently: local "mtime", s3 "LastModified", memory "created".
    for key in ("mtime", "LastModified", "last_modified", "modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def _source(url: str, store: Store | None) -> tuple[_Local | _Remote, str]:
    if "://" not in url:
        return _Local(), url
    from .objects import url_filesystem  # fsspec, loaded for URL artifacts only

    fs, path = url_filesystem(url, store)
    return _Remote(fs), path


def describe(
    url: str, verify: str, store: Store | None, skip: Iterable[str] = ()
) -> dict[str, Any] | None:
    """The record entry for url as it is now; None when it does not exist.
    `skip`: paths in a folder left out (`paired`)."""
    src, path = _source(url, store)
    head = src.stat(path)
    if head is None:
        return None
    kind, size, mtime = head
    digest = None
    if kind == "file":
        # An mtime the location does not tell (HTTP, FTP): its content is
        # what tells a rewrite, as under "digest" (`_state` compares it).
        digest = src.sha256(path) if verify == "digest" or mtime is None else None
    else:
        entries = src.walk(path)
        if skip:
            entries = [e for e in entries if not any(e.rel == s or e.rel.startswith(s + "/") for s in skip)]
        size = sum(e.size for e in entries)
        mtime = max((e.mtime for e in entries if e.mtime is not None), default=mtime)
        digest = _folder_digest(src, path, entries, verify)
    return dict(url=url, kind=kind, size=size, mtime=mtime, digest=digest, verify=verify)


def _folder_digest(src: _Local | _Remote, path: str, entries: list[_Entry], verify: str) -> str:
    # Sorted relative paths, sizes and either file digests or mtimes: a file
    # added, removed, renamed or rewritten changes it.
    h = hashlib.sha256()
    for e in entries:
        mark = src.sha256(path, e.rel) if verify == "digest" or e.mtime is None else repr(e.mtime)
        h.update(f"{e.rel}\0{e.size}\0{mark}\n".encode())
    return h.hexdigest()


def state(entry: dict[str, Any], store: Store | None) -> str:
    """The state now of one recorded artifact: present, missing or changed.
    A location that cannot be looked at raises `StorageError`: an artifact
    that cannot be checked is never taken as present."""
    try:
        return _state(entry, store)
    except OSError as e:
        raise StorageError(entry["url"], f"checking an artifact: {e}") from e


def _state(entry: dict[str, Any], store: Store | None) -> str:
    verify = entry.get("verify") or "digest"
    src, path = _source(entry["url"], store)
    head = src.stat(path)
    if head is None:
        return "missing"
    kind, size, mtime = head
    if kind != entry["kind"]:
        return "changed"
    if kind == "file":
        if size != entry["size"]:
            return "changed"
        if verify == "mtime" and mtime is not None and entry["mtime"] is not None:
            return "present" if mtime == entry["mtime"] else "changed"
        # Unknown then or now: None == None is no sameness. Its content
        # decides (a record that kept none is changed: fail closed). Under
        # "mtime" an entry that lost its mtime (older or damaged) has none.
        if entry.get("digest") is None:
            return "changed"
    now = describe(entry["url"], verify, store)
    if now is None:
        return "missing"
    same = now["digest"] == entry["digest"] and now["size"] == entry["size"]
    if not same and entry.get("inner"):  # as it was, but for what later steps of the run wrote in it
        now = describe(entry["url"], verify, store, entry["inner"]) or now
        same = now["digest"] == entry["digest"] and now["size"] == entry["size"]
    return "present" if same else "changed"


def paired(entry: dict[str, Any], later: Iterable[str]) -> dict[str, Any]:
    """A folder's entry with the paths in it that later registrations of the
    run name (`later`: their URLs): each is checked by its own entry, and a
    write the run itself made there is no change of the folder. A file
    someone else adds, removes or rewrites still is."""
    if entry.get("kind") != "folder":
        return entry
    head = entry["url"].rstrip("/") + "/"
    inner = sorted({url[len(head):] for url in later if url.startswith(head)})
    return {**entry, "inner": inner} if inner else entry


def first_stale(
    entries: Iterable[dict[str, Any]], store: Store | None
) -> tuple[dict[str, Any], str] | None:
    """The first recorded artifact that is not as recorded, with its state."""
    for entry in entries:
        now = state(entry, store)
        if now != "present":
            return entry, now
    return None


def artifact_states(record: Any, store: Store | None = None) -> list[dict[str, Any]]:
    """Each artifact of a step record (`StepRecord`) with its state now:
    url, kind, state ("present", "missing", "changed", or "unreachable" with
    an error when it cannot be looked at), size, mtime and digest as recorded.
    Pass the run's store so that artifacts on its backend use its options."""
    out = []
    for entry in getattr(record, "artifacts", None) or []:
        row = {k: entry.get(k) for k in ("url", "kind", "size", "mtime", "digest", "verify")}
        try:
            row["state"] = state(entry, store)
        except Exception as e:  # a display must not fail on one unreachable URL
            row["state"], row["error"] = "unreachable", f"{type(e).__name__}: {e}"
        out.append(row)
    return out
