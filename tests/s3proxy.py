"""A proxy on 127.0.0.1 in front of the test S3 server that fails one chosen
PUT (or GET, or DELETE: `fail(method=)`): the n-th one (counted from 1 since `fail`) whose path holds `match`
(or, as an outage, it and its tries again until a PUT to another path).
"500-after" and "reset-after" hand the request to the server and then lose
its answer (a 500, or a connection reset), so that the client sends it
again; "500-before" and "reset-mid" fail it before the server has it;
"timeout-after" answers only once the client timed out and sent it again,
"timeout-before" hands it to the server only then (after the retry).
`deny` answers every request whose (decoded) path holds a string with 403
AccessDenied (or `how`: "500-before", a store failing for those objects)
until `deny("")`: a store whose permissions refuse one run; `deny("?delete",
"delete-errors")`: every batched delete answered 200 with an AccessDenied
for each of its keys, none deleted (S3 reports a key it failed to delete
so; "delete-busy": an InternalError, which may pass). `passed` is set
once a request `fail` counts goes through after one was failed: the client
tried again, and it worked.
`hold` delays the first PUT whose path holds `match`, and every PUT after
it, until `release`: a client whose requests stall in the network (its
lease renewals too), then all arrive late."""

from __future__ import annotations

import http.client
import re
import socket
import socketserver
import struct
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

_ERROR = b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"
_SLOW_DOWN = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
_DENIED = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count, self.at, self.how, self.match = 0, 0, "", ""
        self.outage, self.method = False, "PUT"
        self.hit: list[str] = []  # the paths of the requests failed
        self.held = threading.Event()  # a PUT is being held
        self.released = threading.Event()
        self.holding = ""  # the path a hold starts at ("": no hold)
        self.denied, self.denied_how = "", "403"  # every request whose path holds it
        self.passed = threading.Event()
        self.retried = threading.Event()  # the failed request was sent again
        self.deny_left, self.outage_over, self.ended = 0, threading.Event(), ""

    def hold(self, match: str) -> None:
        self.holding = match
        self.held.clear()
        self.released.clear()

    def release(self) -> None:
        self.released.set()

    def wait_held(self, method: str, path: str) -> None:
        """Hold this request, once the hold started, until `release`."""
        if method != "PUT" or not self.holding:
            return
        if self.holding in path:
            self.held.set()
        if self.held.is_set():
            self.released.wait(120)

    def fail(
        self, at: int, how: str, match: str = "", *, outage: bool = False, method: str = "PUT"
    ) -> None:
        """`outage`: that request and the client's tries of it again, until a
        request to another path. `method`: which requests count ("DELETE"
        also counts S3's batched delete, a POST to `?delete`)."""
        with self._lock:
            self.count, self.at, self.how, self.match, self.hit = 0, at, how, match, []
            self.passed.clear()
            self.retried.clear()
            self.outage, self.method = outage, method

    def deny(self, match: str, how: str = "403", times: int = 0) -> None:
        """`times`: an outage of that many requests, then none (`outage_over` set
        once a PUT to a path holding `match` went through after it)."""
        self.denied, self.denied_how, self.deny_left = match, how, times
        self.outage_over.clear()

    def decide(self, method: str, path: str) -> str:
        with self._lock:
            if self.ended and method == "PUT" and self.ended in urllib.parse.unquote(path):
                self.ended = ""
                self.outage_over.set()
            if self.denied and self.denied in urllib.parse.unquote(path):
                if self.deny_left:
                    self.deny_left -= 1
                    if not self.deny_left:
                        self.denied, self.ended = "", self.denied
                return self.denied_how
            if method == "POST" and "?delete" in path:
                method = "DELETE"
            if self.hit and urllib.parse.unquote(path) == self.hit[0]:
                self.retried.set()
            if method != self.method:
                return ""
            if self.outage and self.hit and self.at:
                if urllib.parse.unquote(path) == self.hit[0]:
                    self.hit.append(self.hit[0])  # the client tries it again
                    return self.how
                self.at = 0  # over
            if self.match not in path:
                return ""
            self.count += 1
            if self.count != self.at:
                if self.hit:
                    self.passed.set()
                return ""
            self.hit.append(urllib.parse.unquote(path))
            return self.how


def _delete_errors(body: bytes, code: bytes) -> bytes:
    """A DeleteObjects answer that deleted none of the keys asked for."""
    keys = re.findall(rb"<Key>(.*?)</Key>", body)
    errors = b"".join(
        b"<Error><Key>%s</Key><Code>%s</Code><Message>injected</Message></Error>" % (k, code)
        for k in keys
    )
    return b'<?xml version="1.0" encoding="UTF-8"?><DeleteResult>%s</DeleteResult>' % errors


def start(upstream: str, faults: Faults) -> tuple[str, socketserver.TCPServer]:
    """The proxy's endpoint URL and its server (`shutdown` it)."""
    port = int(upstream.rsplit(":", 1)[1])

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            how = faults.decide(self.command, self.path)
            faults.wait_held(self.command, self.path)
            if how == "reset-mid":
                self.rfile.read(length // 2)
                return self._reset()
            body = self.rfile.read(length) if length else b""
            if how == "timeout-before":  # handed to the server only after the client's retry
                faults.retried.wait(60)
            if how == "403":
                return self._send(403, _DENIED, [])
            if how == "500-before":
                return self._send(500, _ERROR, [])
            if how == "503":
                return self._send(503, _SLOW_DOWN, [])
            if how in ("delete-errors", "delete-busy"):
                code = b"AccessDenied" if how == "delete-errors" else b"InternalError"
                return self._send(200, _delete_errors(body, code), [])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            conn.request(self.command, self.path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            conn.close()
            if how == "reset-after":
                return self._reset()
            if how == "timeout-after":  # stored, answered only once the client gave up and retried
                faults.retried.wait(60)
                return self._reset()
            if how == "500-after":
                return self._send(500, _ERROR, [])
            skip = ("transfer-encoding", "connection", "content-length")
            kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in skip]
            self._send(answer.status, data, kept)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = any

        def _send(self, status: int, data: bytes, headers: list[tuple[str, str]]) -> None:
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _reset(self) -> None:
            # SO_LINGER 0: the close sends a RST, as a dropped connection does.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()

    class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


@contextmanager
def serving(upstream: str) -> Iterator[tuple[str, Faults]]:
    """A proxy in front of `upstream` for the block: its endpoint and its
    faults; a held request is let go before the proxy stops."""
    faults = Faults()
    endpoint, server = start(upstream, faults)
    try:
        yield endpoint, faults
    finally:
        faults.release()
        server.shutdown()
        server.server_close()


def share_botocore_loader() -> None:
    """botocore reads its JSON models (S3's, the endpoints') afresh for each
    session, and s3fs makes one for each client: the tests, in process, open
    hundreds (a store opened again as another process would, a fresh
    bucket). The files never change while the tests run: one loader, kept
    for the session, reads each once."""
    from botocore import loaders, session

    shared = loaders.create_loader()
    made = loaders.create_loader

    def create_loader(search_path_string: str | None = None) -> loaders.Loader:
        return made(search_path_string) if search_path_string else shared

    session.create_loader = create_loader  # type: ignore[attr-defined]
