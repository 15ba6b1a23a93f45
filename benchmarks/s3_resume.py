"""Resuming a 1,000-step run from S3 (a moto server in its own process, over
HTTP on 127.0.0.1): batched reads (one listing, one concurrent `cat`) against
one GET per record, as a naive store would do.

    python benchmarks/s3_resume.py [N] [LATENCY_MS]   # needs the `test` extra

Prints the time to read the run's records (best of three) and of a whole
resume (lease, manifest, records, replaying every step). On localhost both
client and moto are CPU-bound, which caps what concurrency can win; with
LATENCY_MS > 0 (default 20, roughly an in-region S3 round trip) a small proxy
delays every request that much, which is the cost batching exists to hide."""

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

os.environ.update(
    AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
)


class OneRequestPerRecord(FsspecStore):
    """The same store, but reading records one GET at a time."""

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


def make_flow(n: int) -> Any:
    @durable.step(name="trivial")
    def trivial(i: int) -> int:
        return i * 2 + 1

    @durable.workflow(name="bench", run_id="b")
    def flow(done: bool = False) -> int:
        total = sum(trivial(i) for i in range(n))
        if not done:
            durable.suspend("measure the resume")
        return total

    return flow


def best_of(times: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(n: int, endpoint: str, flow: Any, url: str) -> tuple[float, ...]:
    options = {"endpoint_url": endpoint, "skip_instance_cache": True}
    batched, single = FsspecStore(url, **options), OneRequestPerRecord(url, **options)
    read_b = best_of(3, lambda: batched.load_records("bench", "b"))
    read_s = best_of(3, lambda: single.load_records("bench", "b"))
    resume_b = best_of(1, lambda: resume(flow, batched))
    resume_s = best_of(1, lambda: resume(flow, single))
    return read_b, read_s, resume_b, resume_s


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    moto, endpoint = serve(["-m", "moto.server", "-H", "127.0.0.1", "-p"])
    children = [moto]
    try:
        url = f"s3://bench-{uuid.uuid4().hex[:12]}/runs"
        first = durable.open_store(url, endpoint_url=endpoint)
        first.fs.mkdir(url.split("/")[2])  # type: ignore[attr-defined]
        flow = make_flow(n)
        started = time.perf_counter()
        try:
            flow.with_options(store=first)()
        except durable.Suspended:
            pass
        print(f"{n} steps recorded on moto ({endpoint}) in {time.perf_counter() - started:.1f} s")
        report("moto on localhost", measure(n, endpoint, flow, url))
        if latency > 0:
            port = endpoint.rsplit(":", 1)[1]
            slow, slow_endpoint = serve([__file__, "--proxy", port, str(latency / 1000)])
            children.append(slow)
            report(f"+{latency:g} ms per request", measure(n, slow_endpoint, flow, url))
    finally:
        for child in children:
            child.kill()
            child.wait()


def report(label: str, times: tuple[float, ...]) -> None:
    read_b, read_s, resume_b, resume_s = times
    print(f"{label}:")
    print(
        f"  read the records  batched {read_b:7.3f} s   one GET each {read_s:7.3f} s"
        f"   ratio {read_s / read_b:5.1f}x"
    )
    print(
        f"  whole resume      batched {resume_b:7.3f} s   one GET each {resume_s:7.3f} s"
        f"   ratio {resume_s / resume_b:5.1f}x"
    )


def resume(flow: Any, store: durable.Store) -> None:
    try:
        flow.with_options(store=store).resume("b")
    except durable.Suspended:
        pass


if __name__ == "__main__":
    if sys.argv[1:2] == ["--proxy"]:
        proxy(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
