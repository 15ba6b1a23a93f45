"""The progress file (`progress_file=` / `DURABLE_PROGRESS_FILE`): the
`durable show --json` document of a run, rewritten atomically after each
operation, so that an outside agent or a dashboard can follow the run by
reading one JSON file, without importing durable. A subscriber of the event
stream; it costs nothing when unset."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator

from .._core import events
from .._errortext import warn
from .._storage.base import Store
from .._storage.localfs import temp_file

# The events after which the file is rewritten: the run's start and end, and
# each operation that ran or failed (a replay changes nothing in the store).
_WRITE_ON = (
    events.RunStarted,
    events.StepExecuted,
    events.StepRetried,
    events.StepFailed,
    *events.ENDS,
)


def progress_path(option: str | os.PathLike[str] | None) -> str | None:
    """The workflow's `progress_file=`, else `$DURABLE_PROGRESS_FILE`, else None."""
    if option is not None:
        return os.fspath(option)
    return os.environ.get("DURABLE_PROGRESS_FILE") or None


class ProgressFile:
    """Writes one run's document to `path` after each operation. A write that
    fails (a missing folder, a full disk, a run that cannot be read back) is
    a warning, once; the run goes on and later writes are tried again."""

    def __init__(self, path: str, store: Store, workflow: str, run_id: str) -> None:
        self.path, self.store, self.workflow, self.run_id = path, store, workflow, run_id
        self.warned = False

    def on_event(self, event: events.Event) -> None:
        if (event.workflow, event.run_id) == (self.workflow, self.run_id) and isinstance(
            event, _WRITE_ON
        ):
            self.write()

    def write(self) -> None:
        # Run management, loaded only when a progress file is kept.
        from .._manage.document import show_document
        from .._manage.history import describe

        try:
            info, steps = describe(self.store, self.workflow, self.run_id)
            write_atomically(self.path, json.dumps(show_document(info, steps), indent=2))
        except Exception as e:
            if not self.warned:
                self.warned = True
                warn(
                    f"durable: progress file {self.path} not written ({type(e).__name__}: {e}); "
                    "the run goes on without it",
                    RuntimeWarning,
                )


def write_atomically(path: str, text: str) -> None:
    """A reader sees the old document or the new one, never half of one:
    a temp file in the same folder, then `os.replace`."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = temp_file(folder, ".tmp-progress-")  # with the umask: a dashboard reads it
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def following(
    option: str | os.PathLike[str] | None, store: Store, workflow: str, run_id: str
) -> Iterator[None]:
    """Keep the progress file (the workflow's option, else the environment's)
    while the run executes."""
    path = progress_path(option)
    if path is None:
        yield
        return
    writer = ProgressFile(path, store, workflow, run_id)
    with events.subscribe(writer.on_event):
        yield
