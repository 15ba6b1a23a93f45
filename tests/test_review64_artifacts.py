"""verify="mtime" where the modification time cannot be read, found by
review64: a location whose fsspec info names none (HTTP gives only a
`Last-Modified` header, FTP, zip, ...) recorded mtime None, and the check
compared None with None, so a same-size rewrite was "present" and the
completed run answered with the output made from the old content. An
artifact whose modification time is unknown is now checked by its content,
as under verify="digest" (fail closed)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder served over HTTP by the standard library's server: its path and URL."""
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.slow  # aiohttp (fsspec's http) imported: about a second
def test_unknown_mtime_is_checked_by_content(tmp_path: Path, served: tuple[Path, str]) -> None:
    folder, base = served
    ran: list[str] = []

    @durable.step(verify="mtime")
    def make(text: str) -> str:
        ran.append(text)
        (folder / "out.txt").write_text(text)
        durable.artifact(f"{base}/out.txt")
        return text.upper()

    @durable.workflow(store=str(tmp_path / "store"), run_id="r")
    def wf(text: str) -> str:
        return make(text)

    assert wf("aaaa") == "AAAA"
    assert wf("aaaa") == "AAAA"  # untouched: answered, nothing runs
    assert ran == ["aaaa"]
    (folder / "out.txt").write_text("bbbb")  # same size, other content
    assert wf("aaaa") == "AAAA"
    assert ran == ["aaaa", "aaaa"]  # the step ran again (it replayed, for "bbbb", before)


def test_a_folder_linked_into_an_artifact_counts_by_what_it_holds(tmp_path: Path) -> None:
    """A folder a step links into the folder it registers (`out/data ->
    ../shared`) was passed over by the walk, which followed links to files
    only: what changed there, or the link removed, was not seen."""
    shared, out = tmp_path / "shared", tmp_path / "out"
    ran: list[str] = []

    @durable.step
    def make(text: str) -> str:
        ran.append(text)
        shared.mkdir(exist_ok=True)
        (shared / "x.txt").write_text(text)
        out.mkdir(exist_ok=True)
        for link, target in (("data", shared), ("loop", out)):  # a loop is walked once
            if not (out / link).is_symlink():
                (out / link).symlink_to(target, target_is_directory=True)
        durable.artifact(out)
        return text.upper()

    @durable.workflow(store=str(tmp_path / "store"), run_id="linked")
    def wf(text: str) -> str:
        return make(text)

    assert wf("aaaa") == "AAAA"
    assert wf("aaaa") == "AAAA"
    (shared / "x.txt").write_text("bbbb")  # through the link
    assert wf("aaaa") == "AAAA"
    assert ran == ["aaaa", "aaaa"]  # ["aaaa"] before: replayed
    (out / "data").unlink()
    assert wf("aaaa") == "AAAA"
    assert ran == ["aaaa"] * 3
