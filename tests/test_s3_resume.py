"""Resuming from S3 (moto's server over HTTP): stale listings, another
machine, batched reads, storage options, and clear errors before any step."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.manifest import read_manifest
from tests.conftest import ROOT, record_base


def counted(store: durable.Store, counts: Counter[str]) -> Any:
    @durable.step(name="work")
    def work(i: int) -> int:
        counts[f"work{i}"] += 1
        return i * 10

    @durable.workflow(name="s3flow", store=store, run_id="r")
    def flow(stop: int | None = None) -> list[int]:
        out = []
        for i in range(5):
            if i == stop:
                raise RuntimeError(f"stopped before step {i}")
            out.append(work(i))
        return out

    return flow


def test_stale_listing_of_a_second_client_never_reruns_a_step(s3_url: str) -> None:
    counts: Counter[str] = Counter()
    writer = durable.open_store(s3_url, skip_instance_cache=True)
    reader = durable.open_store(s3_url, skip_instance_cache=True)
    with pytest.raises(RuntimeError):
        counted(writer, counts).run(stop=2)
    # Released runs keep their records in a segment: the reader lists the
    # run's segments, and s3fs caches that listing.
    segments = f"{reader.root}/{record_base(reader, 's3flow', 'r')}segments"
    first = [p.rsplit("/", 1)[1] for p in reader.fs.ls(segments)]
    assert first == ["0000000001-0000000001"]
    with pytest.raises(RuntimeError):
        counted(writer, counts).run(stop=4)
    # The reader's cached view is stale: it would show the first segment only.
    assert [p.rsplit("/", 1)[1] for p in reader.fs.ls(segments)] == first
    fresh = writer.fs.ls(segments, refresh=True)
    assert [p.rsplit("/", 1)[1] for p in fresh] == ["0000000001-0000000002"]

    run = counted(reader, counts).run(stop=None)
    assert run.value == [0, 10, 20, 30, 40]
    assert (run.steps_replayed, run.steps_executed, run.resumed_from_step) == (4, 1, 4)
    assert counts == {f"work{i}": 1 for i in range(5)}


def test_resume_reads_records_with_one_listing_and_one_batched_cat(s3_url: str) -> None:
    counts: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        counted(durable.open_store(s3_url), counts).run(stop=4)
    store: Any = durable.open_store(s3_url, skip_instance_cache=True)
    calls: Counter[str] = Counter()
    for name in ("find", "cat", "cat_file", "ls", "info"):
        real = getattr(store.fs, name)
        setattr(store.fs, name, spy(calls, name, real))
    store._checked = True  # count the read itself, not the once-per-store probe
    read_manifest(store, "s3flow", "r")  # as a resume does first: it names the incarnation
    calls.clear()
    records = store.load_records("s3flow", "r")
    assert sorted(records) == [f"steps/{i:08d}" for i in range(4)]
    assert calls == {"find": 1, "cat": 1}
    # The batched cat runs concurrently on a pool raised above botocore's 10.
    assert store.fs.s3.meta.config.max_pool_connections == 64


def spy(calls: Counter[str], name: str, real: Any) -> Any:
    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return real(*args, **kwargs)

    return counting


class ServerRequests(logging.Handler):
    """The HTTP requests moto's server logs for one bucket."""

    def __init__(self, bucket: str) -> None:
        super().__init__()
        self.bucket = bucket
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if f" /{self.bucket}" in message:  # "GET /bucket/key HTTP/1.1", path-style
            self.lines.append(message)


@pytest.fixture
def server_requests(s3_url: str) -> Iterator[ServerRequests]:
    counter = ServerRequests(s3_url.split("/")[2])
    log = logging.getLogger("werkzeug")
    level = log.level
    log.addHandler(counter)
    log.setLevel(logging.INFO)
    try:
        yield counter
    finally:
        log.removeHandler(counter)
        log.setLevel(level)


@pytest.mark.slow
def test_resuming_1000_steps_takes_at_most_20_requests(
    s3_url: str, server_requests: ServerRequests
) -> None:
    ran: Counter[int] = Counter()

    @durable.step(name="trivial")
    def trivial(i: int) -> int:
        ran[i] += 1
        return i * 2 + 1

    @durable.workflow(name="thousand", run_id="t")
    def flow() -> int:
        total = sum(trivial(i) for i in range(1000))
        durable.suspend("measure the resume")
        return total

    with pytest.raises(durable.Suspended):
        flow.with_options(store=durable.open_store(s3_url))()
    assert len(server_requests.lines) > 1000  # one write per record, as each step ends
    server_requests.lines.clear()
    # Another process's resume: its own client, the bucket probe included.
    with pytest.raises(durable.Suspended):
        flow.with_options(store=durable.open_store(s3_url, skip_instance_cache=True)).resume("t")
    assert len(server_requests.lines) <= 20, "\n".join(server_requests.lines)
    assert ran == {i: 1 for i in range(1000)}  # every step replayed, none ran again
    # Of those, the records: one listing, then the one merged segment.
    reader: Any = durable.open_store(s3_url, skip_instance_cache=True)
    reader._checked = True
    read_manifest(reader, "thousand", "t")  # as a resume does first: it names the incarnation
    server_requests.lines.clear()
    assert len(reader.load_records("thousand", "t")) == 1000
    assert [line.split()[5].strip('"') for line in server_requests.lines] == ["GET", "GET"]
    assert "/segments/0000000001-" in server_requests.lines[1]


def test_storage_options_pass_through_without_environment(
    s3_url: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    counts: Counter[str] = Counter()
    direct = durable.open_store(
        s3_url, endpoint_url=s3_endpoint, key="testing", secret="testing", lease_ttl=5
    )
    assert counted(direct, counts).run().value == [0, 10, 20, 30, 40]
    nested: Any = durable.open_store(
        s3_url,
        key="testing",
        secret="testing",
        client_kwargs={"endpoint_url": s3_endpoint},
        config_kwargs={"max_pool_connections": 5},
        skip_instance_cache=True,
    )
    assert counted(nested, counts).run().steps_replayed == 0  # completed: no body
    assert nested.fs.s3.meta.config.max_pool_connections == 5  # the user's value wins
    assert counts == {f"work{i}": 1 for i in range(5)}


# -- clear errors, before any step executes ------------------------------------


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@pytest.fixture
def authenticating_s3() -> Iterator[str]:
    """A second moto server that checks credentials (moto only does that
    process-wide, so it runs in its own process)."""
    port = closed_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="0")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:  # wait until it accepts connections
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline and server.poll() is None, "moto did not start"
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("problem", ["unreachable", "missing bucket", "bad credentials"])
def test_misconfigured_store_fails_before_any_step(
    problem: str, s3_url: str, request: pytest.FixtureRequest
) -> None:
    fast = {"config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 5}}
    url, options = s3_url, dict(fast)
    if problem == "unreachable":
        options["endpoint_url"] = f"http://127.0.0.1:{closed_port()}"
    elif problem == "missing bucket":
        url = "s3://no-such-bucket-for-durable/prefix"
    else:
        options["endpoint_url"] = request.getfixturevalue("authenticating_s3")
    counts: Counter[str] = Counter()
    for call in ("run", "resume"):
        flow = counted(durable.open_store(url, skip_instance_cache=True, **options), counts)
        with pytest.raises(durable.StorageError) as err:
            flow.run() if call == "run" else flow.resume("r")
        assert err.value.url == url and url in str(err.value)
        expected = {
            "unreachable": "EndpointConnectionError",
            "missing bucket": "bucket does not exist",
            "bad credentials": "check the credentials",
        }[problem]
        assert expected in err.value.cause
    assert counts == {}


def test_missing_credentials_fail_before_any_step(s3_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        PYTHONPATH=str(ROOT),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_ENDPOINT_URL=os.environ["AWS_ENDPOINT_URL"],
    )
    code = f"""
import durable
@durable.step
def work() -> int:
    open({str(tmp_path / "ran")!r}, "w").close()
    return 1
@durable.workflow(store={s3_url!r})
def flow() -> int:
    return work()
try:
    flow()
except durable.StorageError as e:
    print(e.cause)
"""
    script = tmp_path / "nocreds.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert "NoCredentialsError" in out.stdout, out.stderr
    assert not (tmp_path / "ran").exists()


def test_local_store_that_cannot_be_written_fails_before_any_step(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    counts: Counter[str] = Counter()
    with pytest.raises(durable.ConfigurationError, match="is a file") as err:
        counted(durable.open_store(blocker / "store"), counts).run()
    assert str(blocker) in str(err.value) and counts == {}


# -- another machine -------------------------------------------------------------

MACHINE_SCRIPT = """
import os, sys
import durable

@durable.step
def work(i: int) -> int:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i}\\n")
    if i == int(os.environ.get("HOLD_AT", "-1")):
        print("HOLDING", flush=True)
        sys.stdin.readline()
    return i + 100

@durable.workflow
def nightly(day: str) -> list:
    return [work(i) for i in range(6)]

# The store is $DURABLE_STORE (an s3:// URL); nothing here names this machine.
run = nightly.with_options(store=durable.open_store(lease_ttl=3), wait=60).run("2026-01-01")
print("DONE", run.run_id, run.steps_replayed, run.steps_executed, run.value[-1], flush=True)
"""


def machine(
    root: Path, s3_url: str, s3_env: dict[str, str], log: Path
) -> tuple[Path, dict[str, str]]:
    """A folder with its own copy of the script, cwd and $HOME."""
    home = root / "home"
    home.mkdir(parents=True)
    (root / "pipeline.py").write_text(MACHINE_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DURABLE_"))}
    env.update(s3_env, HOME=str(home), PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env.update(DURABLE_STORE=s3_url, COUNT_LOG=str(log))
    return root / "pipeline.py", env


@pytest.mark.slow
def test_run_killed_on_one_machine_is_finished_on_another(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str]
) -> None:
    log = tmp_path / "executions.log"
    script_a, env_a = machine(tmp_path / "machine-a", s3_url, s3_env, log)
    # Machine A's lease must name another host, as it would from a real one.
    wrapper = tmp_path / "machine-a" / "as_machine_a.py"
    wrapper.write_text(
        "import runpy, socket, sys\n"
        "socket.gethostname = lambda: 'machine-a'\n"
        "sys.argv = [sys.argv[1]]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    a = subprocess.Popen(
        [sys.executable, str(wrapper), str(script_a)],
        cwd=script_a.parent,
        env=dict(env_a, HOLD_AT="3"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert a.stdout is not None and a.stdin is not None
    assert a.stdout.readline().strip() == "HOLDING"
    os.kill(a.pid, signal.SIGKILL)
    a.wait()
    a.stdout.close()
    a.stdin.close()

    other = tmp_path / "far" / "away" / "machine-b"
    script_b, env_b = machine(other, s3_url, s3_env, log)
    shutil.rmtree(tmp_path / "machine-a")  # nothing of machine A is left locally
    b = subprocess.run(
        [sys.executable, str(script_b)], cwd=other, env=env_b, capture_output=True, text=True
    )
    assert b.returncode == 0, b.stderr
    tag, run_id, replayed, executed, last = b.stdout.split()
    assert (tag, replayed, executed, last) == ("DONE", "3", "3", "105")
    assert run_id.startswith("pipeline.nightly-")
    ran = Counter(int(x) for x in log.read_text().split())
    assert ran == {0: 1, 1: 1, 2: 1, 3: 2, 4: 1, 5: 1}
