"""The check of the names a user gives a run's key (its workflow's name,
its run id), at every entry point that takes them: a name like
`../../other/wf` must never reach another store's run, and a name a file
system or an object store would refuse or read as a pattern is refused
before anything is written."""

from __future__ import annotations

from ..errors import ConfigurationError

_BAD_KEY_CHARS = frozenset("*?[]")
# File systems allow 255 bytes a name; room is left for the suffixes a child
# run id adds (`.<position>`).
MAX_KEY_PART = 200


def check_key_part(kind: str, value: object) -> str:
    if type(value) is str and value in _VALID:  # checked already: the same answer
        return value
    if not isinstance(value, str):  # a RunInfo or Run of `runs()`: its .run_id (its repr is a page)
        hint = " (pass its .run_id)" if isinstance(getattr(value, "run_id", None), str) else ""
        shown = "" if hint else f" {value!r}"
        raise ConfigurationError(f"invalid {kind}{shown}: it must be a string, not {type(value).__name__}{hint}")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_KEY_PART:
        raise ConfigurationError(
            f"invalid {kind} {value[:40]!r}...: it is {len(value)} characters long; at most "
            f"{MAX_KEY_PART} bytes fit in a file or object name. Choose a shorter one."
        )
    bad = (
        not value
        or not value.isprintable()
        or "/" in value
        or "\\" in value
        or ".." in value
        or value.startswith(".")
        or " " in value  # the only white space a printable string can hold
        or not _BAD_KEY_CHARS.isdisjoint(value)
    )
    if bad:
        raise ConfigurationError(
            f"invalid {kind} {value!r}: it must be non-empty, not start with '.', and contain "
            "no '/', '\\', '..', whitespace, control characters or glob characters (* ? [ ])"
        )
    if type(value) is str:  # a subclass may compare equal to what it is not
        if len(_VALID) >= 4096:  # run ids made by the thousand (a process serving calls)
            _VALID.clear()
        _VALID.add(value)
    return value


# The names and run ids `check_key_part` passed: it is asked three times a
# call of a workflow (6,200 instructions each), for the same few strings.
_VALID: set[str] = set()


def check_names(workflow: str, run_id: str) -> None:
    """Both parts of a run's key, for every entry point that takes them: a
    name like `../../other/wf` must never reach another store's run."""
    check_key_part("workflow name", workflow)
    check_key_part("run id", run_id)
