"""Faults of the world around a run: a file size limit, a store that turns
read-only or is deleted under a live holder, an S3 endpoint cut off, and a
holder stopped (SIGSTOP) past its lease on S3 while another takes over.

The run in a child process must end with a named error (or finish), write
nothing it should not, and a later call must give the right value with no
recorded step executed again."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from tests.faults import flows
from tests.faults.common import (
    Outcome,
    Place,
    check_counts,
    executions,
    new_run_id,
    read_line,
    recorded,
    spawn,
)

N = 8


def _child_run(place: Place, outcome: Outcome, trial: str, run_id: str, **env: str) -> str:
    """Run the sync flow in a child with a fault; return how it ended."""
    child = spawn(place, "sync", N, run_id, **env)
    out, _ = child.communicate(timeout=300)
    lines = out.splitlines()
    if env.get("FAULT_LOG") == "/dev/stdout":  # executions came through the pipe
        with place.log.open("a") as log:
            log.writelines(f"{ln}\n" for ln in lines if ln.split(" ")[0].isdigit())
    ends = [ln.split(" ")[0:2] for ln in lines if ln.startswith(("VALUE", "ERROR"))]
    ending = ends[-1] if ends else ["?"]
    said = " ".join(ending) if ending[0] == "ERROR" else ending[0]
    if child.returncode not in (0, 3):
        outcome.violation(trial, f"the child ended with {child.returncode}: {out[-300:]}")
    outcome.endings[said] += 1
    return str(child.pid)


def _resume(place: Place, outcome: Outcome, trial: str, run_id: str, pid: str) -> None:
    store = place.store()
    done = recorded(store, "sync", run_id, N)
    try:
        value = flows.call("sync", N, run_id, store)
    except Exception as e:
        outcome.violation(trial, f"the next call raised {type(e).__name__}: {e}")
        return
    if value != flows.expected(N):
        outcome.violation(trial, "the next call returned a wrong value")
    runs = executions(place.log, "work")
    check_counts(outcome, trial, done, runs.get(int(pid), Counter()),
                 runs.get(os.getpid(), Counter()), N)  # fmt: skip


def file_size_limit(place: Place, trials: int, rng: random.Random) -> Outcome:
    """RLIMIT_FSIZE set to a random size inside a random step: appends and
    renames past it fail with EFBIG (a StorageError naming the limit)."""
    outcome = Outcome("RLIMIT_FSIZE")
    for _ in range(trials):
        place.log.write_text("")
        run_id, at, size = new_run_id("fsize"), rng.randrange(N), rng.randrange(0, 4000)
        trial = f"{run_id} limit {size} B from step {at}"
        outcome.trials += 1
        # Its executions go to its stdout, a pipe: the limit applies to files.
        pid = _child_run(place, outcome, trial, run_id, FAULT_HOOK_AT=str(at),
                         FAULT_FSIZE=str(size), FAULT_LOG="/dev/stdout")  # fmt: skip
        _resume(place, outcome, trial, run_id, pid)
    return outcome


@contextlib.contextmanager
def writable_again(folder: Path) -> Iterator[str]:
    """Yield the shell command that makes folder read-only (a read-only
    bind mount as root, permissions otherwise); undo it on the way out."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        command = f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder}"
        try:
            yield command
        finally:
            while subprocess.run(["umount", str(folder)], capture_output=True).returncode == 0:
                pass  # (a failed trial may have mounted twice)
    else:
        try:
            yield f"chmod -R a-w {folder}"
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(folder)], check=False)


def can_make_read_only(folder: Path) -> bool:
    with writable_again(folder / "probe") as command:
        if subprocess.run(command, shell=True, capture_output=True).returncode != 0:
            return False
        try:
            (folder / "probe" / "x").write_text("x")
        except OSError:
            return True
        return False


def read_only_store(place: Place, trials: int, rng: random.Random) -> Outcome:
    """The store turns read-only inside a random step (EROFS or EACCES)."""
    outcome = Outcome("read-only store")
    root = Path(place.url)
    if not can_make_read_only(root.parent):
        outcome.endings["skipped: cannot make a folder read-only here"] += 1
        return outcome
    for _ in range(trials):
        place.log.write_text("")
        run_id, at = new_run_id("ro"), rng.randrange(N)
        trial = f"{run_id} read-only from step {at}"
        outcome.trials += 1
        with writable_again(root) as command:
            pid = _child_run(place, outcome, trial, run_id, FAULT_HOOK_AT=str(at), FAULT_HOOK=command)
        _resume(place, outcome, trial, run_id, pid)
    return outcome


def deleted_store(place: Place, trials: int, rng: random.Random) -> Outcome:
    """The store's root, the workflow's or the run's folder is deleted
    inside a random step. The holder must write nothing more (its lease file
    is gone): the folder stays gone, and a new call runs afresh."""
    outcome = Outcome("deleted store folders")
    root = Path(place.url)
    for _ in range(trials):
        place.log.write_text("")
        run_id, at = new_run_id("gone"), rng.randrange(N)
        which = rng.choice(["root", "workflow", "run"])
        folder = {"root": root, "workflow": root / "sync_flow",
                  "run": root / "sync_flow" / run_id}[which]  # fmt: skip
        trial = f"{run_id} {which} folder deleted in step {at}"
        outcome.trials += 1
        pid = _child_run(place, outcome, trial, run_id, FAULT_HOOK_AT=str(at),
                         FAULT_HOOK=f"rm -rf {folder}")  # fmt: skip
        if (folder.exists() and any(folder.rglob(f"*{run_id}*"))) or (folder / "run").exists():
            outcome.violation(trial, "the holder wrote after its folder was deleted")
        _resume(place, outcome, trial, run_id, pid)
    return outcome


# -- S3 -----------------------------------------------------------------------


class CutProxy:
    """A TCP proxy on 127.0.0.1 in front of an S3 endpoint that can be cut:
    every open connection is reset and new ones are refused until restored."""

    def __init__(self, target: str) -> None:
        self.target = target.rsplit(":", 1)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.cut_off = False
        self.open: set[socket.socket] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut_off:
                client.close()
                continue
            upstream = socket.create_connection((self.target[0].split("//")[-1], int(self.target[1])))
            with self.lock:
                self.open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        self.cut_off = True
        with self.lock:
            for s in self.open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.open.clear()

    def restore(self) -> None:
        self.cut_off = False

    def close(self) -> None:
        self.cut()
        self.listener.close()


def endpoint_cut(place: Place, endpoint: str, trials: int, rng: random.Random) -> Outcome:
    """The S3 endpoint is cut off at a random moment of a run (every
    connection reset, new ones refused), then restored."""
    outcome = Outcome("S3 endpoint cut")
    proxy = CutProxy(endpoint)
    cut_place = Place(place.url, dict(place.env, AWS_ENDPOINT_URL=proxy.url), place.log)
    try:
        window = _clean_duration(cut_place)
        for _ in range(trials):
            place.log.write_text("")
            run_id = new_run_id("cut")
            delay = rng.uniform(0, window)
            trial = f"{run_id} cut after {delay * 1000:.0f} ms"
            child = spawn(cut_place, "sync", N, run_id, FAULT_RETRIES="2")
            assert read_line(child.stdout) == "STARTED"
            time.sleep(delay)  # the fault's timing, not a synchronisation
            proxy.cut()
            out, _ = child.communicate(timeout=300)
            proxy.restore()
            outcome.trials += 1
            ending = out.split(" ")[0:2] if out else ["?"]
            outcome.endings[" ".join(ending) if ending[0] == "ERROR" else ending[0]] += 1
            if child.returncode not in (0, 3) or (ending[0] == "ERROR" and ending[1] != "StorageError"):
                outcome.violation(trial, f"the child ended with {child.returncode}: {out[-300:]}")
            _resume(cut_place, outcome, trial, run_id, str(child.pid))
    finally:
        proxy.close()
    return outcome


def _clean_duration(place: Place) -> float:
    started = time.perf_counter()
    flows.call("sync", N, new_run_id("clean"), place.store())
    return time.perf_counter() - started


STOPPED = """
import json, os, sys
sys.path.insert(0, {root!r})
import durable
from tests.faults import flows

store = flows.open_store()
print("STARTED", flush=True)
try:
    value = flows.FLOWS["sync"].with_options(store=store, run_id=sys.argv[1], wait=120)(4)
except durable.LeaseLostError as e:
    print("LEASE_LOST", e.position, flush=True)
    sys.exit(4)
print("VALUE", json.dumps(value == flows.expected(4)), flush=True)
"""


def stopped_past_lease(place: Place, trials: int) -> Outcome:
    """A holder is stopped (SIGSTOP) inside step 1, past its lease (2 s); a
    second process takes over and completes the run; the first, continued,
    must write nothing and raise LeaseLostError."""
    outcome = Outcome("SIGSTOP past the lease (S3)")
    script = place.log.with_suffix(".stopped.py")
    script.write_text(STOPPED.format(root=str(Path(flows.__file__).parents[2])))
    env = place.child_env(FAULT_TTL="2", FAULT_HOOK_AT="1", FAULT_HOOK="kill -STOP $PPID")
    store = place.store()
    for _ in range(trials):
        run_id = new_run_id("stop")
        outcome.trials += 1
        first = subprocess.Popen(
            [sys.executable, str(script), run_id], env=env, stdout=subprocess.PIPE, text=True
        )
        try:
            assert read_line(first.stdout) == "STARTED"
            _wait_stopped(first.pid)
            second = subprocess.run(
                [sys.executable, str(script), run_id],
                env=place.child_env(FAULT_TTL="2"),
                capture_output=True,
                text=True,
                timeout=300,
            )
            before = store.get_many(store.list(f"sync_flow/{run_id}/"))
            os.kill(first.pid, signal.SIGCONT)
            said, _ = first.communicate(timeout=300)
        finally:
            if first.poll() is None:
                os.kill(first.pid, signal.SIGCONT)
                first.kill()
                first.wait()
        trial = run_id
        if second.stdout.strip() != "STARTED\nVALUE true":
            outcome.violation(trial, f"the second process said {second.stdout!r}")
        outcome.endings[said.strip().split(" ")[0] or "?"] += 1
        if first.returncode != 4 or not said.strip().startswith("LEASE_LOST"):
            outcome.violation(trial, f"the continued holder ended {first.returncode}: {said!r}")
        if store.get_many(store.list(f"sync_flow/{run_id}/")) != before:
            outcome.violation(trial, "the continued holder wrote to the store")
    return outcome


def _wait_stopped(pid: int) -> None:
    """Until the process is stopped (state T in /proc), polling: the state
    change is the only signal there is."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("T"):
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never stopped")

