"""Every Python block of README.md and docs/*.md, copied into a script and run
twice in the same folder, passes both times, as a new user does it.

Before: 28 blocks failed on their second run (an `AssertionError` on counts
of executions, a refusal for a run id the first run had finished, output that
differed), with nothing on the page saying a second run behaves otherwise.
Each now starts from an empty store of its own.

One interpreter per page (`_drive`, run in a child from its source): it
imports durable once, then forks a process for each run of each block, which
runs `example.py` as `__main__` in the block's folder, as `python example.py`
would, with `$DURABLE_STORE` and `$TMPDIR` in that folder.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pytest

from . import forkcli
from .test_docs import RUN, Block

PAGES = sorted({b.page for b in RUN})


def _drive() -> None:
    """The child: argv[1] is a JSON list of block folders; prints a JSON list
    of [folder, run, exit status] for each failed run."""
    import json
    import os
    import runpy
    import sys
    import tempfile
    import traceback

    import durable  # noqa: F401  (once, before the forks)

    failed = []
    for folder in json.loads(sys.argv[1]):
        for attempt in (1, 2):
            pid = os.fork()
            if pid == 0:
                os.chdir(folder)
                os.environ.update(DURABLE_STORE=f"{folder}/store", TMPDIR=folder)
                tempfile.tempdir = None
                with open(f"run{attempt}.out", "w") as out:
                    os.dup2(out.fileno(), 1)
                    os.dup2(out.fileno(), 2)
                sys.argv = ["example.py"]
                status = 0
                try:
                    runpy.run_path("example.py", run_name="__main__")
                except SystemExit as exit_:
                    status = exit_.code if isinstance(exit_.code, int) else 1
                except BaseException:
                    traceback.print_exc()
                    status = 1
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
            _, code = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(code) != 0:
                failed.append([folder, attempt, os.waitstatus_to_exitcode(code)])
    print(json.dumps(failed))


def _folders(page: str, tmp_path: Path) -> dict[str, Block]:
    plain = [b for b in RUN if b.page == page and not {"s3", "dask"} & b.needs]
    folders = {}
    for i, block in enumerate(plain):
        folder = tmp_path / f"block{i}"
        folder.mkdir()
        (folder / "example.py").write_text(block.source, encoding="utf-8")
        folders[str(folder)] = block
    return folders


@pytest.mark.skipif(sys.platform == "win32", reason="the driver forks")
@pytest.mark.parametrize("page", PAGES)
def test_every_block_of_a_page_runs_twice_as_a_script(
    page: str, tmp_path: Path, child_env: dict[str, str]
) -> None:
    folders = _folders(page, tmp_path)
    source = inspect.getsource(_drive) + "\n_drive()\n"
    # the driver forked from an interpreter that imported durable (`forkcli`)
    argv = ["-c", source, json.dumps(list(folders))]
    done = forkcli.call(argv, tmp_path, dict(child_env, DURABLE_PROGRESS="0"), timeout=240)
    assert done.returncode == 0, done.stderr
    failed = [
        f"{folders[folder].id} failed on run {attempt} (exit {status}):\n"
        + (Path(folder) / f"run{attempt}.out").read_text(encoding="utf-8")
        for folder, attempt, status in json.loads(done.stdout)
    ]
    assert failed == []
