"""Resuming a 1,000-step run from S3 (a moto server in its own process, over
HTTP on 127.0.0.1): records grouped into segments (what durable does) against
one object per record read with one GET each (what a naive store does).

    python benchmarks/s3_resume.py [N] [LATENCY_MS]   # needs the `test` extra

For each layout it prints the HTTP requests and the time (best of three) to
read the run's records, and of a whole resume in a new client (bucket probe,
lease, manifest, records, replaying every step, suspending again). On
localhost both client and moto are CPU-bound; with LATENCY_MS > 0 (default 20,
roughly an in-region S3 round trip) a small proxy delays every request that
much, which is the cost few requests exist to save. Requests are counted by
botocore as it sends them."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import durable
from durable._storage.objects import FsspecStore
from durable._storage.recordlog import ObjectRecords

os.environ.update(
    AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
)


class OneObjectPerRecord(FsspecStore):
    """The same store without segments, reading records one GET at a time."""

    def records(self, workflow: str, run_id: str) -> ObjectRecords:
        return ObjectRecords(self, workflow, run_id)  # no segment writer

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        return {k: v for k in keys if (v := self.get(k)) is not None}


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def serve(args: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """Start a child process listening on a free port; wait until it does."""
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, *args, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return child, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)


def proxy(target_port: int, delay: float, port: int) -> None:
    """Forward to target_port, holding every client chunk back by delay."""

    async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, wait: float) -> None:
        while data := await src.read(1 << 16):
            if wait:
                await asyncio.sleep(wait)
            dst.write(data)
            await dst.drain()
        dst.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(
            pump(reader, up_writer, delay), pump(up_reader, writer, 0.0), return_exceptions=True
        )

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        await server.serve_forever()

    asyncio.run(main())


def make_flow(n: int, run_id: str) -> Any:
    @durable.step(name="trivial")
    def trivial(i: int) -> int:
        return i * 2 + 1

    @durable.workflow(name="bench", run_id=run_id)
    def flow() -> int:
        total = sum(trivial(i) for i in range(n))
        durable.suspend("measure the resume")
        return total

    return flow


LAYOUTS: dict[str, tuple[type[FsspecStore], str]] = {
    "segments": (FsspecStore, "seg"),
    "one GET per record": (OneObjectPerRecord, "single"),
}


def open_counted(kind: type[FsspecStore], url: str, endpoint: str) -> tuple[FsspecStore, list[int]]:
    """A new client (as another process has) and its count of HTTP requests."""
    store = kind(url, endpoint_url=endpoint, skip_instance_cache=True)
    store.fs.connect()
    sent = [0]

    def count(**_: Any) -> None:
        sent[0] += 1

    store.fs.s3.meta.events.register("before-send", count)
    return store, sent


def measure(n: int, endpoint: str, url: str) -> dict[str, tuple[int, float, int, float]]:
    """layout -> (requests, seconds) to read the records, then of a whole resume."""
    out = {}
    for label, (kind, run_id) in LAYOUTS.items():
        reads: list[tuple[int, float]] = []
        for _ in range(3):
            store, sent = open_counted(kind, url, endpoint)
            store._checked = True  # the read alone, not the once-per-client bucket probe
            took = timed(lambda s=store, r=run_id: s.load_records("bench", r))
            reads.append((sent[0], took))
        store, sent = open_counted(kind, url, endpoint)
        took = timed(lambda s=store, r=run_id: resume(make_flow(n, r), s))
        out[label] = (*min(reads, key=lambda r: r[1]), sent[0], took)
    return out


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    moto, endpoint = serve(["-m", "moto.server", "-H", "127.0.0.1", "-p"])
    children = [moto]
    try:
        url = f"s3://bench-{uuid.uuid4().hex[:12]}/runs"
        FsspecStore(url, endpoint_url=endpoint).fs.mkdir(url.split("/")[2])
        for kind, run_id in LAYOUTS.values():
            store = kind(url, endpoint_url=endpoint, skip_instance_cache=True)
            started = time.perf_counter()
            resume(make_flow(n, run_id), store, first=True)
            print(f"{n} steps recorded ({kind.__name__}) in {time.perf_counter() - started:.1f} s")
        report("moto on localhost", measure(n, endpoint, url))
        if latency > 0:
            port = endpoint.rsplit(":", 1)[1]
            slow, slow_endpoint = serve([__file__, "--proxy", port, str(latency / 1000)])
            children.append(slow)
            report(f"+{latency:g} ms per request", measure(n, slow_endpoint, url))
    finally:
        for child in children:
            child.kill()
            child.wait()


def report(label: str, rows: dict[str, tuple[int, float, int, float]]) -> None:
    print(f"{label}:")
    print(f"  {'':20} {'read: requests':>15} {'time':>9}   {'resume: requests':>17} {'time':>9}")
    for name, (reqs, took, resume_reqs, resume_took) in rows.items():
        print(f"  {name:20} {reqs:15d} {took:8.3f}s   {resume_reqs:17d} {resume_took:8.3f}s")
    (r1, t1, rr1, rt1), (r2, t2, rr2, rt2) = rows.values()
    print(
        f"  {'ratio':20} {r2 / r1:14.0f}x {t2 / t1:8.1f}x   {rr2 / rr1:16.0f}x {rt2 / rt1:8.1f}x"
    )


def resume(flow: Any, store: durable.Store, *, first: bool = False) -> None:
    try:
        if first:
            flow.with_options(store=store)()
        else:
            flow.with_options(store=store).resume(flow.options.run_id)
    except durable.Suspended:
        pass


if __name__ == "__main__":
    if sys.argv[1:2] == ["--proxy"]:
        proxy(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
