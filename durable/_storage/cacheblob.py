"""A large cached value's blob, read and checked chunk by chunk (`cachestore`).

An entry written now records a sum of each 8 MiB chunk of its blob's body
(`SUMS`): CRC32 in an unsigned store, SHA-256 in a signed one (the signed
entry vouches for its sums, and nobody can make other bytes match a
SHA-256). A hit reads the blob into fresh memory of its own and checks each
chunk as soon as it is read, in a few threads that share the reading and
the checking (`os.preadv`, the CRC and `hashlib` release the GIL):
with a CPU free for each, a 100 MB value takes about half the wall time of
reading it and then checking it (the CPU time is the same).
Nothing is returned before every chunk has been checked, and a chunk that
does not match makes the whole read a miss.

Blobs of entries written before the sums are read the same way, then
checked whole (`blob_body`)."""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .base import SHARED_BLOBS, Store
from .crc import crc32
from .local import LocalStore
from .localfs import local_error
from .log import NOFOLLOW
from .records import StepRecord, sealed_body, sealed_head

if TYPE_CHECKING:
    import mmap

BLOBS = f"{SHARED_BLOBS[0]}/{SHARED_BLOBS[1]}/blobs/"
CRC = "crc32"  # in an older unsigned entry's extra: the CRC32 of its blob's body
SUMS = "sums"  # in an entry's extra: {"chunk": bytes per chunk, "crc32" | "sha256": [sum...]}
CHUNK = 8 << 20  # several per large value, so that the threads share the work evenly
# The CPUs this process may run on (a container's share, not the host's), at most 4.
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
_THREADS = max(1, min(4, _CPUS or 1))
_SUM: dict[str, Callable[[memoryview], Any]] = {
    "crc32": crc32,
    "sha256": lambda part: hashlib.sha256(part).digest(),
}
Check = Callable[[int, memoryview], bool]  # (chunk number, its bytes) -> intact


def blob_body(store: Store, rec: StepRecord) -> memoryview | None:
    """A large value's encoded bytes, or None when its blob is gone or
    damaged (a miss: the value is computed and stored again). The entry
    naming the blob was verified when it was read (checksum, or HMAC with
    the signing key), and vouches for the blob by what it records:
    - the sums of each chunk of the body (`SUMS`, entries written now):
      CRC32, or SHA-256 with a signing key;
    - older entries: unsigned, the body's size and CRC32 (`CRC`); else the
      SHA-256 of the whole blob, its content address.
    Unsigned, a CRC tells damage, and nothing could tell a forger, who
    could rewrite the entry too; signed, every check is a SHA-256 that the
    signed entry names."""
    assert rec.blob is not None
    signed, size = store.signing_key is not None, rec.extra.get("size")
    check = checker(rec.extra.get(SUMS), signed, size) if type(size) is int else None
    if check is None:
        return _checked_whole(store, rec, signed)
    assert isinstance(size, int)
    if isinstance(store, LocalStore):  # read and checked at once
        return _body(_read_local(store, rec.blob, signed, (size, check)), size)
    whole = store.get_blob(*SHARED_BLOBS, rec.blob)
    return body_of(whole, size, check) if whole is not None else None


def _checked_whole(store: Store, rec: StepRecord, signed: bool) -> memoryview | None:
    # An entry written before the sums per chunk: its blob checked whole.
    assert rec.blob is not None
    if isinstance(store, LocalStore):
        raw: bytes | memoryview | None = _read_local(store, rec.blob, signed, None)
    else:
        raw = store.get_blob(*SHARED_BLOBS, rec.blob)
    if raw is None:
        return None
    crc = rec.extra.get(CRC) if not signed else None
    if crc is None and hashlib.sha256(raw).hexdigest() != rec.blob:
        return None
    body = _body(raw, rec.extra.get("size") if crc is not None else None)
    if crc is not None and (body is None or crc32(body) != crc):
        return None
    return body


def _body(raw: bytes | memoryview | None, size: int | None) -> memoryview | None:
    # The body of a blob read (None: absent or damaged), of `size` bytes when given.
    if raw is None:
        return None
    try:
        body = sealed_body(raw)
    except ValueError:
        return None
    return body if size is None or len(body) == size else None


def _read_local(
    store: LocalStore, digest: str, signed: bool, checked: tuple[int, Check] | None
) -> memoryview | None:
    try:
        return read_file(store.root + os.sep + BLOBS + digest, signed, checked)
    except OSError as e:
        raise local_error(store.url, f"reading {BLOBS}{digest}", e) from e


def chunk_sums(body: bytes, signed: bool) -> dict[str, Any]:
    """The `SUMS` of a body about to be stored (several threads, as a hit)."""
    algo = "sha256" if signed else "crc32"
    view, fn = memoryview(body), _SUM[algo]
    sums: list[Any] = [None] * _count(len(body))

    def one(i: int) -> bool:
        sums[i] = fn(view[i * CHUNK : (i + 1) * CHUNK])
        return True

    in_threads(len(sums), one)
    return {"chunk": CHUNK, algo: sums}


def checker(sums: Any, signed: bool, size: int) -> Check | None:
    """How each chunk of a body of `size` bytes is checked against an
    entry's `SUMS`; None when they are not usable here (absent, malformed,
    or CRCs where a signed store needs SHA-256)."""
    if not isinstance(sums, dict) or sums.get("chunk") != CHUNK:
        return None
    algo = "sha256" if "sha256" in sums or signed else "crc32"
    expected = sums.get(algo)
    if not isinstance(expected, list) or len(expected) != _count(size):
        return None
    fn = _SUM[algo]
    return lambda i, part: bool(fn(part) == expected[i])


def body_of(raw: bytes | memoryview, size: int, check: Check) -> memoryview | None:
    """The checked body of a blob read whole (an object store's `get`)."""
    try:
        body = sealed_body(raw)
    except ValueError:
        return None
    if len(body) != size:
        return None
    ok = in_threads(_count(size), lambda i: check(i, body[i * CHUNK : (i + 1) * CHUNK]))
    return body if ok else None


def read_file(path: str, signed: bool, checked: tuple[int, Check] | None) -> memoryview | None:
    """A local blob's bytes, in fresh writable memory of the caller's own,
    with the body 64-byte aligned (the arrays of a `PICKLE_OOB` value are
    used where they lie). `checked`: the body's size and how each of its
    chunks is checked. None when the file is absent, shorter than it says,
    not of that size, or a chunk does not match."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        total, head = os.fstat(fd).st_size, sealed_head(signed)
        size, check = checked if checked is not None else (total - head, None)
        if size < 0 or total != head + size:  # the chunks the sums are of, no more
            return None
        pad = -head % 64
        view = memoryview(_fresh(pad + total))[pad : pad + total]
        body = view[head:]

        def one(i: int) -> bool:
            part = body[i * CHUNK : (i + 1) * CHUNK]
            return _fill(fd, part, head + i * CHUNK) and (check is None or check(i, part))

        if not (_fill(fd, view[:head], 0) and in_threads(_count(len(body)), one)):
            return None
        return view
    finally:
        os.close(fd)


def _fill(fd: int, part: memoryview, offset: int) -> bool:
    """Read part's length from offset; False when the file ends first."""
    done = 0
    while done < len(part):
        got = _pread_into(fd, part[done:], offset + done)
        if not got:
            return False
        done += got
    return True


def _pread_into(fd: int, part: memoryview, offset: int) -> int:
    if _PREADV:  # straight into the memory
        return os.preadv(fd, [part], offset)
    data = os.pread(fd, len(part), offset)  # a platform without preadv: one copy more
    part[: len(data)] = data
    return len(data)


_PREADV = hasattr(os, "preadv")


def _fresh(size: int) -> mmap.mmap:
    # Private anonymous memory (a shared map is backed by shmem, slower to
    # fault in), on huge pages where the system gives them on request: a
    # 100 MB value is faulted in 50 times instead of 25,000, which halves
    # the cost of reading it. numpy's own large arrays are allocated so.
    # (mmap imported here: a run that reads no large value need not load it.)
    import mmap

    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    memory = mmap.mmap(-1, max(size, 1), flags=flags) if flags else mmap.mmap(-1, max(size, 1))
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None and size >= 2 << 20:
        try:
            memory.madvise(advice)
        except OSError:  # refused: ordinary pages, as without it
            pass
    return memory


def _count(size: int) -> int:
    return -(-size // CHUNK)


def in_threads(count: int, work: Callable[[int], bool]) -> bool:
    """Whether work(i) is True for every i in range(count). Up to `_THREADS`
    threads (this one among them) take the next i in turn; the first False
    stops them; an exception in any of them is raised here, once all have
    stopped (none is left reading into memory the caller gets)."""
    ticket, lock, ok = itertools.count(), threading.Lock(), [True]
    errors: list[BaseException] = []

    def take() -> int:
        with lock:
            return next(ticket)

    def run() -> None:
        try:
            while ok[0] and (i := take()) < count:
                if not work(i):
                    ok[0] = False  # only ever set to False: a failure is never overwritten
        except BaseException as e:  # raised again below, once every thread has stopped
            ok[0] = False
            errors.append(e)

    started: list[threading.Thread] = []
    try:
        for _ in range(min(count, _THREADS) - 1):
            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            started.append(thread)
    except RuntimeError:  # no more threads to be had: fewer do the work
        pass
    try:
        run()
    finally:
        for thread in started:
            thread.join()
    if errors:
        raise errors[0]
    return ok[0]
