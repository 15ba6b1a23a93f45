"""`python ARGV` as the tests' children run it (`clikit.durable`,
`scripts.run_in`, `scripts.run_each`, `faults.common.spawn`, the lease
tests' holders through `popen` and `call`), in a process forked from an
interpreter that imported the command line and the engine once (and s3fs,
for a child of a test on moto's server: ~0.4 s more a child).

A fresh child paid ~0.1 s of CPU starting Python and importing the command
line, and one running a workflow file ~0.1 s more for the fingerprint's
modules at its first step: the CLI tests start hundreds. Each is still a
process of its own, with the test's working folder, environment, umask and
path, its own stdin (a pipe the test writes to, or /dev/null), stdout and
stderr, a pid to signal (SIGSTOP, SIGKILL), and a normal exit
(atexit handlers, buffers flushed); only the imports are shared, and two
servers take turns so that one run and the next are two imports of what
they load, in two hash seeds, as two fresh Pythons are (one interpreter
forking both hid a false refusal: review55's logging handler). A test
needing more of a fresh interpreter (its own PYTHONHASHSEED, `-m`) gets
one (`forkable`); DURABLE_TEST_FRESH_CLI=1 gives one to every child."""

from __future__ import annotations

import atexit
import io
import itertools
import json
import locale
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]

# The server: imports, then forks for each request a waiter, which forks
# the command's process and tells the client its pid, then its exit status.
# Each process reaps its children, so that `time` and rusage count them.
# The command's process leaves the loop and runs the command at the top
# level, so that it ends as `python -c` does.
_SERVER = r"""
import importlib, importlib.machinery, json, os, select, signal, socket, sys, types
import durable._cli, durable._api.step, durable._api.workflow
for name in filter(None, sys.argv[3].split(",")):
    importlib.import_module(name)

base = [p for p in sys.path if p and p != sys.argv[2]]
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(64)
print("ready", flush=True)
job = None
while job is None:
    ready, _, _ = select.select([server, sys.stdin], [], [])
    if sys.stdin in ready:  # the test process closed it, or is gone: reap, then end
        while True:
            try:
                os.wait()
            except ChildProcessError:
                sys.exit(0)
    conn, _ = server.accept()
    if os.fork() != 0:
        conn.close()
        try:  # the waiters that ended (reaped here: their CPU counts as the test's)
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        continue
    server.close()
    conn.settimeout(None)
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    size = int(data[:10])
    while len(data) < 10 + size:
        data += conn.recv(1 << 16)
    pid = os.fork()
    if pid == 0:
        conn.close()
        job = json.loads(data[10:]), fds
        break
    for fd in fds:
        os.close(fd)
    conn.sendall(b"%d\n" % pid)
    # Left a zombie until the client has its status, as a child of its own
    # is until waited for: a signal sent to one that ended finds it.
    ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    code = ended.si_status if ended.si_code == os.CLD_EXITED else -ended.si_status
    conn.sendall(b"%d\n" % code)
    conn.recv(1)
    os.waitpid(pid, 0)
    os._exit(0)

spec, fds = job
for target, fd in enumerate(fds):
    os.dup2(fd, target)
    os.close(fd)
os.chdir(spec["cwd"])
os.umask(spec["umask"])
os.environ.clear()
os.environ.update(spec["env"])
head, argv = spec["argv"][:2], spec["argv"]
if head[0] == "-c":  # `python -c CODE ARGS`
    where, argv, code, name = "", ["-c", *argv[2:]], head[1], "<string>"
    main = types.ModuleType("__main__")
else:  # `python SCRIPT ARGS`
    name = os.path.abspath(head[0])
    where, code = os.path.dirname(name), open(name, encoding="utf-8").read()
    main = types.ModuleType("__main__")
    main.__file__, main.__loader__ = name, importlib.machinery.SourceFileLoader("__main__", name)
sys.path[:] = [where, *(p for p in spec["env"].get("PYTHONPATH", "").split(os.pathsep) if p), *base]
sys.argv, sys.orig_argv = argv, [sys.executable, *spec["argv"]]
sys.dont_write_bytecode = bool(spec["env"].get("PYTHONDONTWRITEBYTECODE"))
sys.modules["__main__"] = main
signal.signal(signal.SIGINT, signal.default_int_handler)
del server, job, spec, fds, base, head
exec(compile(code, name, "exec"), main.__dict__)
"""

# Two servers, each with a hash seed of its own, taken in turn: the runs a
# test makes one after another (a first run, its resume) see their sets
# and dicts of str in other orders, as fresh Pythons would.
# The children that talk to the tests' S3 server (moto: AWS_ENDPOINT_URL
# set) are forked from servers of their own that imported s3fs as well
# (~0.4 s of CPU a child paid for it, and the campaign and the lease tests
# start dozens); the other children's servers import no more than before.
_started: dict[tuple[int, str], tuple[subprocess.Popen[str], str]] = {}
_SEEDS = [random.randrange(1, 2**32) for _ in range(2)]
_turns = {"": itertools.count(), "s3fs": itertools.count()}


def _server(preload: str = "") -> str:
    """The socket of the server whose turn it is among those that imported
    `preload` too, started at its first call."""
    seed = _SEEDS[next(_turns[preload]) % len(_SEEDS)]
    key = (seed, preload)
    if key in _started and _started[key][0].poll() is None:
        return _started[key][1]
    folder = tempfile.mkdtemp(prefix="durable-cli-")
    path = os.path.join(folder, "s")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": str(seed)}
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, path, str(ROOT), preload],
        env=env,
        cwd=folder,
        stdin=subprocess.PIPE,  # closed: the server ends
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdout.readline() == "ready\n"
    _started[key] = (server, path)
    return path


@atexit.register
def _stop() -> None:
    for server, path in _started.values():
        server.communicate()
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def forkable(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether `python ARGV` may be forked: not `-m`, nor under a hash seed
    of its own (the servers' are theirs), nor under DURABLE_TEST_FRESH_CLI."""
    return argv[0] != "-m" and "PYTHONHASHSEED" not in env and not os.environ.get("DURABLE_TEST_FRESH_CLI")


class Forked:
    """A forked `python ARGV` as `subprocess.Popen` shows one: its pid, its
    stdout (a pipe, as text) when asked for, its exit status (a signal's
    negated, as Popen gives it) from the process that waits for it."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], fds: Sequence[int]) -> None:
        mask = os.umask(0o022)  # the test's, which a fresh child would inherit
        os.umask(mask)
        spec = json.dumps({"argv": list(argv), "cwd": str(cwd), "env": dict(env), "umask": mask}).encode()
        self.args = [sys.executable, *argv]
        self.returncode: int | None = None
        self.stdin: IO[str] | None = None
        self.stdout: IO[str] | None = None
        self._conn = socket.socket(socket.AF_UNIX)
        self._conn.connect(_server("s3fs" if "AWS_ENDPOINT_URL" in env else ""))
        socket.send_fds(self._conn, [b"%010d" % len(spec) + spec], list(fds))
        self._reply = self._conn.makefile("rb")
        self.pid = int(self._reply.readline())

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            self.wait()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._conn.settimeout(timeout)
            try:
                line = self._reply.readline()
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
            self.returncode = int(line)
            self._reply.close()
            self._conn.close()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, input: str | None = None, timeout: float | None = None) -> tuple[str | None, None]:
        if self.stdin is not None:  # as Popen's: `input` written, then stdin closed
            try:
                if input:
                    self.stdin.write(input)
                self.stdin.close()
            except BrokenPipeError:  # it ended without reading it
                pass
        out = self.stdout.read() if self.stdout else None
        self.wait(timeout)
        return out, None


def start(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    stdout_pipe: bool = False,
    stdin_pipe: bool = False,
    stderr: IO[str] | None = None,
) -> Forked:
    """`python ARGV` forked, stderr the file `stderr` or /dev/null, stdout a
    pipe (`stdout_pipe`) or /dev/null, stdin a pipe the test writes to
    (`stdin_pipe`: a holder told when to go on) or /dev/null."""
    encoding = locale.getpreferredencoding(False)
    with open(os.devnull, "rb") as null_in, open(os.devnull, "wb") as null:
        ends: list[int] = []  # the child's ends: closed here once it has them
        stdin = stdin_write = stdout = None
        try:
            if stdin_pipe:
                stdin, stdin_write = os.pipe()
                ends.append(stdin)
            if stdout_pipe:
                stdout, write = os.pipe()
                ends.append(write)
            fds = [
                null_in.fileno() if stdin is None else stdin,
                write if stdout_pipe else null.fileno(),
                (null if stderr is None else stderr).fileno(),
            ]
            child = Forked(argv, cwd, env, fds)
        except BaseException:
            for fd in (stdin_write, stdout):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            for fd in ends:
                os.close(fd)
    # closed by the caller (or `communicate`), as a Popen's pipes
    if stdin_write is not None:
        child.stdin = open(stdin_write, "w", encoding=encoding, buffering=1)
    if stdout is not None:
        child.stdout = open(stdout, encoding=encoding)
    return child


def popen(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    stdin_pipe: bool = False,
    stderr: IO[str] | None = None,
) -> subprocess.Popen[str] | Forked:
    """`python ARGV` as `subprocess.Popen(..., stdout=PIPE, text=True)` with
    stdin a pipe (`stdin_pipe`) or /dev/null, stderr the file `stderr` or
    /dev/null: forked where it may (`forkable`), else a fresh Python."""
    if forkable(argv, env):
        return start(argv, cwd, env, stdout_pipe=True, stdin_pipe=stdin_pipe, stderr=stderr)
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if stderr is None else stderr,
        text=True,
    )


def call(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`run` where it may (`forkable`), else `python ARGV` in a fresh Python."""
    if forkable(argv, env):
        return run(argv, cwd, env, timeout)
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def run(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """`python ARGV` (`-c CODE ARGS` or `SCRIPT ARGS`) in `cwd` with `env`
    and stdin from /dev/null, output captured as text, as `subprocess.run`
    gives it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull, "rb") as stdin:
        child = Forked(argv, cwd, env, [stdin.fileno(), out.fileno(), err.fileno()])
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            raise
        texts = []
        for file in (out, err):  # as `text=True` reads them
            file.seek(0)
            texts.append(io.TextIOWrapper(file, encoding=locale.getpreferredencoding(False)).read())
    return subprocess.CompletedProcess(child.args, child.wait(), *texts)
