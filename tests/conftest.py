from __future__ import annotations

import compileall
import functools
import gc
import importlib
import importlib.util
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import types
import uuid
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage import cachestore
from durable._storage.keys import run_prefix, space
from durable._storage.manifest import read_manifest
from durable._storage.segments import decode_segment, encode_segment
from durable.testing import FakeClock, fake_clock, memory_store
from durable.testing.store_conformance import StoreConformance

from . import s3proxy

ROOT = Path(__file__).resolve().parents[1]

# The processes the tests start stand for a user's runs, and many of them
# run a file a test has just edited: a .pyc written within the same second
# for a source of the same size would be taken for it, and the child would
# run the old code. Only the children are told. This process, and each
# pytest-xdist worker (which inherits the variable, then reads this file),
# keeps caching what it imports (s3fs, botocore, moto, pandas: seconds to
# compile, for every child otherwise); the tests that edit a module and
# import it here turn the cache off themselves. The package's modules are
# compiled now, the CLI's among them, which only children import, and
# cloudpickle, which the engine loads only for a value msgpack cannot
# hold: a test process may never import it while its children do (35 of
# 122 children of the fingerprint and CLI tests compiled it, 8 ms each).
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
# A test that fails in the engine shows the engine's frames: a user's
# traceback leaves them out (`_core.shown`), the project's own must not.
os.environ["DURABLE_TRACEBACK"] = "full"
# The environment's commands on PATH, as in a venv activated: the commands
# durable prints start `durable` only when that one is this Python's own
# (`_errortext.program`), and the tests expect them so.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
sys.dont_write_bytecode = False
compileall.compile_dir(ROOT / "durable", quiet=1)
for _folder in importlib.util.find_spec("cloudpickle").submodule_search_locations or ():  # type: ignore[union-attr]
    compileall.compile_dir(_folder, quiet=1)

# What a Jupyter kernel imports and no test process does: ipykernel, the
# debugger it bundles (pydevd), IPython's shell. The children being told not
# to write bytecode, each kernel a test started compiled 163 modules again
# (0.4 s of its CPU); the notebook tests have them compiled once, here.
KERNEL_PACKAGES = ("ipykernel", "IPython", "debugpy", "platformdirs", "comm", "tornado", "tqdm")
_TESTS_FOLDER = re.compile(r"[/\\](tests?|testing)[/\\]")


@pytest.fixture(scope="session")
def kernel_compiled() -> None:
    """KERNEL_PACKAGES compiled (a module whose .pyc is current is skipped)."""
    for name in KERNEL_PACKAGES:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations if spec else None) or ():
            compileall.compile_dir(folder, quiet=2, rx=_TESTS_FOLDER)


# A shell without job control starts what it runs in the background (`&`,
# as scripts/test-pythons runs the other Pythons' shards) with SIGINT
# ignored, and Python then keeps it ignored: the Ctrl-C tests, which send a
# real SIGINT to this process or to children that inherit the disposition,
# would see no KeyboardInterrupt. A user's Ctrl-C is what they stand for.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _forget_memory_stores() -> Iterator[None]:
    """Drop what a test wrote to memory:// when it ends. fsspec keeps every
    memory:// file of the process in one dict, and its `info` (behind every
    `exists`) scans all of it: left to grow over the thousand tests an xdist
    worker runs, it made memory:// tests seconds slower late in the suite
    than alone."""
    from fsspec.implementations.memory import MemoryFileSystem

    files, dirs = set(MemoryFileSystem.store), set(MemoryFileSystem.pseudo_dirs)
    yield
    for path in set(MemoryFileSystem.store) - files:
        MemoryFileSystem.store.pop(path, None)
    MemoryFileSystem.pseudo_dirs[:] = [d for d in MemoryFileSystem.pseudo_dirs if d in dirs]


@pytest.fixture(autouse=True)
def _forget_configure() -> Iterator[None]:
    """Undo what a test (or a script it ran in process, `durable run` of a
    file calling `durable.configure(store="team-runs")`) configured: left
    set, the cached steps of every later test of that worker kept their
    entries in that store instead of theirs."""
    from durable import _settings

    def forget() -> None:
        if _settings._configured:
            durable.configure(**dict.fromkeys(_settings._configured))

    # Also before: a store left configured by something no test's teardown
    # saw made a cached call of a later test write its entries into the
    # checkout's own `team-runs` folder (seen once, a cached call computed
    # again in the parent of test_peer_ports_third's process-pool race).
    forget()
    yield
    forget()


@pytest.fixture(autouse=True)
def _keep_main() -> Iterator[None]:
    """Put back `__main__`, `sys.argv` and `sys.path` after a test that ran
    `durable run FILE` in process: the command makes the script `__main__`
    (as `python FILE` would), and a process pool spawned later by another
    test of that worker re-ran that script in each worker (a script whose
    import fails broke every pool: test_fanout's process cases)."""
    main, argv, path = sys.modules.get("__main__"), sys.argv, list(sys.path)
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main
    sys.argv = argv
    if sys.path != path:
        sys.path[:] = path


@pytest.fixture
def store() -> durable.Store:
    return memory_store()


@pytest.fixture
def local_store(tmp_path: Path) -> durable.Store:
    return durable.open_store(tmp_path / "store")


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    with fake_clock() as c:
        yield c


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    """Environment for child interpreters: this checkout importable, store in tmp."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["DURABLE_STORE"] = str(tmp_path / "store")
    env["PYTHONUNBUFFERED"] = "1"
    return env


PY = sys.executable


# -- S3: moto's threaded server on 127.0.0.1, s3fs talking HTTP to it --------

S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _tune_moto() -> None:
    """Two changes to moto's server, made before it starts.

    Its conditional PUT (`If-None-Match: *`, `If-Match`) checks and then
    writes with nothing held between, so two threads of the server can both
    pass the check: S3 itself decides such a PUT atomically, and the create
    race tests hold the server to that. The lock is taken after the body is
    read, so a client stopped mid-upload holds nothing.

    It also lists and stats its own package folder (180 folders) twice for
    every request to find the service; the list never changes while the
    tests run, and listing it once takes a third off each request."""
    from moto import backends
    from moto.s3.responses import S3Response

    if hasattr(backends, "list_of_moto_modules"):  # speed only: a later moto may not need it
        modules = tuple(backends.list_of_moto_modules())
        backends.list_of_moto_modules = lambda: modules
    put, lock = S3Response.put_object, threading.Lock()

    def atomic_put(self: S3Response, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return put(self, *args, **kwargs)

    S3Response.put_object = atomic_put  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server for the whole session, on a free port."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request
    _tune_moto()
    s3proxy.share_botocore_loader()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_options(s3_endpoint: str) -> dict[str, str]:
    """Storage options for open_store(s3_url, **s3_options)."""
    return {"endpoint_url": s3_endpoint, "key": "testing", "secret": "testing"}


@pytest.fixture(scope="session")
def one_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle of the first root of botocore's. moto answers over plain
    HTTP, where no certificate is checked, yet each S3 client loads its
    whole bundle (21 ms) and each process importing aiohttp the system's
    (55 ms): 75 ms of each S3 child's CPU, 21 ms of each client in a test."""
    from botocore.httpsession import get_cert_path

    text, end = Path(get_cert_path(True)).read_text(encoding="ascii"), "-----END CERTIFICATE-----"
    path = tmp_path_factory.mktemp("ca") / "one-root.pem"
    path.write_text(text[text.index("-----BEGIN CERTIFICATE-----") : text.index(end) + len(end)] + "\n")
    return path


@pytest.fixture
def s3_env(s3_endpoint: str, one_root: Path) -> dict[str, str]:
    """The AWS environment that points boto at the test server (and its
    clients, and children's OpenSSL, at a bundle of one certificate)."""
    bundle = {"AWS_CA_BUNDLE": str(one_root), "SSL_CERT_FILE": str(one_root)}
    return dict(S3_CREDENTIALS, AWS_ENDPOINT_URL=s3_endpoint, **bundle)


@pytest.fixture
def s3_url(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket per test; `open_store(s3_url)` works as is, through the
    usual AWS environment variables (set here, and inherited by children)."""
    import s3fs

    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    bucket = f"durable-{uuid.uuid4().hex[:16]}"
    s3fs.S3FileSystem().mkdir(bucket)
    return f"s3://{bucket}/prefix"


@pytest.fixture
def proxy(s3_endpoint: str) -> Iterator[tuple[str, s3proxy.Faults]]:
    """A proxy on 127.0.0.1 in front of moto that fails or holds the S3
    requests a test names (tests/s3proxy.py): its endpoint and its faults."""
    with s3proxy.serving(s3_endpoint) as served:
        yield served


# -- one store location, opened again as another process would ---------------

KINDS = ["memory", "local", "s3"]


@dataclass
class Place:
    kind: str
    url: str

    def open(self, *, own_client: bool = False, **options: Any) -> durable.Store:
        """Open the place again; own_client=True gives S3 a separate s3fs
        client with its own listing cache, as another process would have."""
        if own_client and self.kind == "s3":
            options["skip_instance_cache"] = True
        return durable.open_store(self.url, **options)

    @property
    def object_leases(self) -> bool:
        return self.kind != "local"  # local disk uses flock


@pytest.fixture(params=KINDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """A store location; the suites that take it run on memory, local and S3."""
    kind = request.param
    if kind == "memory":
        return Place(kind, f"memory://place-{uuid.uuid4().hex}")
    if kind == "local":
        return Place(kind, str(tmp_path / "store"))
    return Place(kind, request.getfixturevalue("s3_url"))


def only_cache_entry(store: durable.Store) -> str:
    """The key of the one cache entry a test's store holds."""
    [key] = store.list(cachestore.ENTRIES)
    return key


def rewrite_record(
    store: durable.Store, run: tuple[str, str], name: str, data: bytes | None, key: bytes | None
) -> None:
    """Change a stored record where it lives, as someone with write access
    to the store could (data None: the record is lost): in the segment that
    holds it, re-sealed with `key` (an object store's released run), else as
    its own object (a single object, or the local log's `replace_record`)."""
    base = record_base(store, *run)
    for seg in store.list(base + "segments/"):
        raw = store.get(seg)
        assert raw is not None
        entries = decode_segment(raw, store.signing_key, run[1], seg)
        if any(n == name for n, _ in entries):
            kept = [(n, data if n == name else d) for n, d in entries]
            store.put(seg, encode_segment([(n, d) for n, d in kept if d is not None], key))
            return
    if data is None:
        store.delete([base + name])
    else:
        store.replace_record(*run, name, data)


# Modules whose every test drives the `durable` command (or several
# processes) and takes seconds, the same on every Python.
_PROCESS_MODULES = frozenset({
    "test_cli.py", "test_cli_polish.py", "test_cli_edges.py", "test_cli_newcomer.py", "test_cache_procs.py",
})  # fmt: skip
# Modules that check what no Python version changes (the docs' code blocks,
# which the other modules test version by version, the package's layout,
# the stand-in for Windows' locks, store error messages, the HTML timeline):
# run once, with the slow tests, to keep `make test` within its budget.
_SAME_ON_EVERY_PYTHON = frozenset({"test_docs.py", "test_layout.py", "test_portable.py", "test_store_errors.py", "test_html.py"})
# Tests elsewhere that spend their seconds starting Pythons (numpy and pandas
# in several hash seeds, the command line, a second script), not in code
# whose behaviour differs between versions; each has fast siblings that run
# everywhere (the Hypothesis digest test, the in-process engine tests).
_PROCESS_TESTS = frozenset({
    "test_a_derived_run_id_for_arrays_and_frames_is_the_same_in_every_process",
    "test_digests_are_the_same_in_any_process",
    "test_the_command_line_never_loads_a_planted_pickle",
    "test_derived_run_id_is_the_same_in_a_new_process",
    "test_two_scripts_defining_main_never_share_runs",
    "test_a_run_started_by_python_resumes_under_durable_run",
    "test_durable_log_info_shows_the_resume_on_stderr",
    "test_environment_in_a_subprocess",
    "test_durable_run_takes_a_level",
})  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`slow` means "takes seconds and does not depend on the Python
    version": real kill -9 (marked in place), the store conformance suite's
    second-process checks, everything on moto's S3 server, and the command
    line in child processes. `make test` runs them once, on the default
    Python; the fast suite runs on every other one (scripts/test-pythons)."""
    for item in items:
        owner = getattr(item, "cls", None)
        if owner is not None and issubclass(owner, StoreConformance):
            if item.originalname in StoreConformance.PROCESS_CHECKS:  # type: ignore[attr-defined]
                item.add_marker(pytest.mark.slow)
        modules = _PROCESS_MODULES | _SAME_ON_EVERY_PYTHON
        if _on_s3(item) or item.path.name in modules or _name(item) in _PROCESS_TESTS:
            item.add_marker(pytest.mark.slow)
    _check_slow_said(items)
    sampled_out = _sampled_out(items) + [
        item
        for item in items
        if item.get_closest_marker("slow") is None and (_in_another_shard(item.path) or _golden_elsewhere(item))
    ]
    if sampled_out:
        config.hook.pytest_deselected(items=sampled_out)
        items[:] = [item for item in items if item not in sampled_out]


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """What collecting has made and kept so far frozen (`gc.freeze`), its
    garbage collected first: left out of every later pass of the cycle
    collector. The test modules, their steps' fingerprints and what was
    analysed for them, about a million objects in a worker of the default
    Python's whole suite, live to the session's end, and each full pass
    walked them all again: 11 during that collection, 2.2 s of its 10 s of
    CPU (a worker's collection took 13.0 s of CPU, 7.7 s frozen; a fast
    shard's 4.6-5.3 s, 3.0 s)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """The same after each module's last test (its module fixtures torn
    down): what its tests left alive (the engine's caches of their steps'
    fingerprints, 800,000 objects by the end of a fast shard) is frozen,
    the rest collected. Walked again by each full pass, it cost a fast
    shard 4.8 s of CPU in 140 passes (1.6 s frozen). What a test makes and
    drops is collected as before: the tests that count on `gc.collect` (a
    plan closed, a weak reference gone) collect what they made."""
    result = yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()
    return result


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not slow"`, a module whose tests are all slow is not even
    imported: some import Dask, pandas or nbclient, which cost the fast
    suite of every other Python seconds of collection for nothing. In the
    whole suite of a sharded run (the default Python's), another shard's
    module counts only for its slow tests: one whose text cannot hold any
    is not imported either (each of two workers imported 160 such modules,
    and fingerprinted their steps, for nothing: ~8 s of CPU each)."""
    if collection_path.suffix != ".py":
        return None
    if not config.getoption("markexpr", ""):
        return True if _in_another_shard(collection_path) and not _may_hold_slow(collection_path) else None
    if config.getoption("markexpr", "") != "not slow":
        return None
    name = collection_path.name
    if name in _PROCESS_MODULES | _SAME_ON_EVERY_PYTHON or _marked_slow(collection_path):
        return True
    return True if _in_another_shard(collection_path) else None


def _marked_slow(path: Path) -> bool:
    """Whether the module marks all its tests slow (read, not imported)."""
    if not path.name.startswith("test_"):
        return False
    return _SLOW_MODULE.search(path.read_text(encoding="utf-8")) is not None


_SLOW_MODULE = re.compile(r"^pytestmark = pytest\.mark\.slow\b", re.MULTILINE)
# What the text of a module with a slow test says (see pytest_collection_modifyitems):
# a mark, S3 (a fixture, a name, a case), the `place` fixture (whose cases
# include S3), the conformance suite, a test slow by name. Read, not imported;
# `_check_slow_said` fails the collection of a module that holds a slow test
# without saying so, so that a sharded run never leaves it out unseen.
_MAY_HOLD_SLOW = re.compile(
    r"mark\.slow|s3|S3|\bplace\s*[:,)]|[\"']place[\"']|StoreConformance|" + "|".join(sorted(_PROCESS_TESTS))
)


@functools.cache
def _may_hold_slow(path: Path) -> bool:
    return _MAY_HOLD_SLOW.search(path.read_text(encoding="utf-8")) is not None


def _check_slow_said(items: list[pytest.Item]) -> None:
    """A slow test in a dealt module whose text `_MAY_HOLD_SLOW` does not
    match would run nowhere under `make test`: its shard's Python deselects
    it and the default one's whole suite does not import the module."""
    dealt = _shards(2)
    unsaid = {
        item.path.name: _name(item)
        for item in items
        if item.get_closest_marker("slow") is not None and item.path.name in dealt and not _may_hold_slow(item.path)
    }
    if unsaid:
        raise pytest.UsageError(
            "slow tests in modules whose text tests/conftest.py's _MAY_HOLD_SLOW does not match (a sharded run "
            f"would skip them everywhere): {unsaid}; mark them @pytest.mark.slow where they are defined"
        )


def _golden_elsewhere(item: pytest.Item) -> bool:
    """Whether `item` is a golden-fingerprint case of another Python that
    has a shard of its own (DURABLE_TEST_PYTHONS, set by
    scripts/test-pythons). Each case runs its version's own interpreter
    (`-I`: nothing of this environment), so its outcome is the same from
    any Python; the shard of the Python it names runs it (each shard ran
    all four: 12 of 16 children for nothing, and their probes)."""
    spec = getattr(item, "callspec", None)
    if _name(item) != "test_golden_fingerprints" or spec is None:
        return False
    version = spec.params["version"]
    sharded = os.environ.get("DURABLE_TEST_PYTHONS", "").split()
    return bool(version in sharded and version != "{}.{}".format(*sys.version_info[:2]))


def _sampled_out(items: list[pytest.Item]) -> list[pytest.Item]:
    """The S3 cases of each `s3_sample` test but its first: their S3 path
    is the one the first case takes (the other stores run every case)."""
    first: set[str] = set()
    out = []
    for item in items:
        spec = getattr(item, "callspec", None)
        if item.get_closest_marker("s3_sample") is None or spec is None:
            continue
        if spec.params.get("place") != "s3":
            continue
        if _name(item) in first:
            out.append(item)
        first.add(_name(item))
    return out


# Tests of how the fingerprint reads source (normalisation, golden values,
# every syntax node, edits, rewritten and static code, deep helpers): the
# syntax trees and bytecode it works on change from one Python to the next,
# so they run on every one. Those of what a step's statements reach (other
# modules, libraries, methods, values held: the same rules over those trees)
# and of how a value is counted by its contents (test_contents_*) run on one
# Python in turn, as the other fast tests do: on every one they cost about
# 80 s and 75 s of CPU, and `make test` neared its budget (2026-12-07).
_ON_EVERY_PYTHON = re.compile(r"fingerprint_(golden|nodes|edits|source|rewrite|static|deep)")


def _in_another_shard(path: Path) -> bool:
    """Under DURABLE_TEST_SHARD=k/n, whether the module's fast tests are
    another shard's. scripts/test-pythons gives one shard to each Python:
    the fingerprint tests run on every Python, the slow tests on the default
    one, and each other fast test on one Python, in turn (before, on the
    default Python and on one other: 114 s of CPU more, and `make test` at
    the edge of its budget). By module, so that a Python running only fast
    tests does not even import (and fingerprint the steps of) the others'
    modules. The modules are dealt largest first to the shard with the
    fewest bytes so far (none to the default Python's, which runs the slow
    tests), so the shards take about the same time."""
    shard = os.environ.get("DURABLE_TEST_SHARD", "")
    if not shard or _ON_EVERY_PYTHON.search(path.name) or not path.name.startswith("test_"):
        return False
    k, n = (int(part) for part in shard.split("/"))
    return _shards(n).get(path.name, k - 1) != k - 1


@functools.cache
def _shards(n: int) -> dict[str, int]:
    """Module name -> its shard (0 to n-1), for the modules of this folder
    that other shards share out."""
    paths = [
        p
        for p in Path(__file__).parent.rglob("test_*.py")
        if not _ON_EVERY_PYTHON.search(p.name)
        and p.name not in _PROCESS_MODULES | _SAME_ON_EVERY_PYTHON
        and not _marked_slow(p)
    ]
    # The first shard is the default Python's, which also runs every slow test and
    # ended last even with half a share of these (510 s against 315-458 s for the
    # others, 2026-12-07): where there are others, it takes none of them.
    loads: list[float] = [float("inf") if n > 1 else 0.0] + [0.0] * (n - 1)
    out = {}
    for path in sorted(paths, key=lambda p: (-p.stat().st_size, p.name)):
        shard = loads.index(min(loads))
        out[path.name] = shard
        loads[shard] += path.stat().st_size
    return out


def _name(item: pytest.Item) -> str:
    return str(getattr(item, "originalname", item.name))


def _on_s3(item: pytest.Item) -> bool:
    owner = getattr(item, "cls", None)
    if "s3_url" in getattr(item, "fixturenames", ()) or (owner and "S3" in owner.__name__):
        return True
    if "s3" in _name(item).split("_"):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "s3" in callspec.id.split("-")


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """load(name, source) writes tmp_path/name.py and imports it freshly (fingerprint tests)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # a stale .pyc would hide edits
    loaded: list[str] = []

    def _load(name: str, source: str) -> types.ModuleType:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        sys.modules.pop(name, None)
        importlib.invalidate_caches()
        loaded.append(name)
        return importlib.import_module(name)

    yield _load
    for name in loaded:
        sys.modules.pop(name, None)


def record_base(store: durable.Store, workflow: str, run_id: str) -> str:
    """The key prefix of the records of the run's incarnation, as its manifest
    names it (`keys.space`): the run's prefix for a run without one."""
    manifest = read_manifest(store, workflow, run_id)
    return run_prefix(workflow, run_id) + space(manifest.incarnation if manifest else "")


@pytest.fixture
def unwritable() -> Iterator[Callable[[Path], None]]:
    """Makes folders unwritable: immutable for root (whom no mode stops),
    read-only for anyone else; writable again at the end."""
    locked: list[Path] = []

    def lock(folder: Path) -> None:
        if os.geteuid() == 0:
            if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
                pytest.skip("chattr +i is not supported on this file system")
        else:
            folder.chmod(0o555)
        locked.append(folder)

    yield lock
    for folder in locked:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=False)
        folder.chmod(0o755)
