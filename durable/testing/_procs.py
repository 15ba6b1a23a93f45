"""Second processes for the store conformance suite (see `_child`): each
opens the place with the backend's opener, waits for commands, and can be
frozen, thawed or killed for real."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ._base import Opener


class Child:
    """One second process; ready for commands after `wait_ready`."""

    def __init__(self, opener: Opener, folder: Path, **options: Any) -> None:
        name = uuid.uuid4().hex[:8]
        payload = folder / f"child-{name}.pickle"
        payload.write_bytes(pickle.dumps((opener, options)))
        self.errors = folder / f"child-{name}.stderr"
        # The child imports what this process can: the opener's module too.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        with open(self.errors, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "durable.testing._child", str(payload)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
            )  # fmt: skip

    def wait_ready(self) -> None:
        assert self.read() == {"ready": True}

    def send(self, op: str, **args: Any) -> None:
        self._stdin.write(json.dumps({"op": op, **args}) + "\n")
        self._stdin.flush()

    def read(self) -> dict[str, Any]:
        """The next line the child says: an answer, or what a step announced."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            raise AssertionError(
                f"the second process ended (status {self.proc.returncode}): "
                + self.errors.read_text(errors="replace")[-3000:]
            )
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        self.send(op, **args)
        return self.read()

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def kill(self) -> None:
        """A real `kill -9`: nothing in the child runs after it."""
        if self.proc.poll() is None:
            self.signal(signal.SIGKILL)
        self.proc.wait()

    @property
    def _stdin(self) -> IO[str]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextlib.contextmanager
def children(opener: Opener, folder: Path, n: int, **options: Any) -> Iterator[list[Child]]:
    """n second processes on the place, all ended when the block ends."""
    started: list[Child] = []
    try:
        for _ in range(n):  # all start at once; each imports durable meanwhile
            started.append(Child(opener, folder, **options))
        for child in started:
            child.wait_ready()
        yield started
    finally:
        for child in started:
            if hasattr(signal, "SIGCONT") and child.proc.poll() is None:
                child.signal(signal.SIGCONT)  # a frozen child never reads its end of input
            child.close()
