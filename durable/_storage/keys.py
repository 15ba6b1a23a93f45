"""The names of everything a run stores, written and parsed here only:
positions (`3` in the body, `2.0.1` inside an asyncio task), the records of
a position (`steps/00000003`, ...), a loop's checkpointed items, blobs, the
manifest and the lease."""

from __future__ import annotations

import secrets
from typing import TypeAlias

# The check of a run's names has a module of its own; `base` and `_core.arguments` take it from here.
from .keycheck import check_key_part as check_key_part
from .keycheck import check_names as check_names

# -- positions and the names of their records ---------------------------------
# The body's operations are numbered 0, 1, 2 … (plain ints, as they always
# were); an operation inside an asyncio task has a path (`PositionPath`): the task's
# scope (creator's prefix + (creator's next position, k-th task created there))
# and its own index, so paths always have an odd length of 3 or more. A key
# spells each part with 8 digits: `steps/00000002.00000000.00000001`.


class PositionPath(tuple[int, ...]):
    """The position of an operation inside an asyncio task; prints as `2.0.1`."""

    __slots__ = ()

    def __str__(self) -> str:
        return ".".join(str(p) for p in self)

    def __repr__(self) -> str:
        return f"<position {self}>"


Position: TypeAlias = int | PositionPath
RECORD_KINDS = ("steps", "attempts", "timers")  # one record per position
ITEMS = "items"  # a loop block's checkpointed items: items/<position>/<index>


def format_position(position: Position) -> str:
    """`3`, or `2.0.1` for an operation inside an asyncio task."""
    return str(position)


def position_key(position: Position) -> tuple[int, ...]:
    """The order of positions: a path sorts after its first part's top-level
    position and before the next one (2 < 2.0.0 < 2.0.1 < 2.1.0 < 3)."""
    return (position,) if isinstance(position, int) else tuple(position)


def top_level(position: Position) -> int:
    """The body's position a path hangs from (the position itself for an int)."""
    return position if isinstance(position, int) else position[0]


def as_position(value: object) -> Position | None:
    """A position read back from a record (msgpack gives a path as a list)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if not isinstance(value, (list, tuple)) or len(value) < 3 or len(value) % 2 == 0:
        return None
    parts = [as_position(p) for p in value]
    ints = [p for p in parts if isinstance(p, int)]
    return PositionPath(ints) if len(ints) == len(parts) else None


def parse_position(text: str) -> Position | None:
    """A position from the form `durable show` prints ("3", "2.0.1"), or None."""
    parts = text.strip().split(".")
    if not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return as_position([int(p) for p in parts] if len(parts) > 1 else int(parts[0]))


# A body position's spelling: the commonest name part, and in the record
# name every recorded step writes (`record_name`, without a call to `_key`).
_BODY = "%08d"
_BODY_RECORD = "steps/" + _BODY


def _key(position: Position) -> str:
    if type(position) is int:  # a body position: most records
        return _BODY % position
    return ".".join(_BODY % p for p in position_key(position))


def _parse(text: str) -> Position | None:
    if len(text) == 8 and _digits(text):  # the common case: a body position
        return int(text)
    parts = text.split(".")
    if not all(_digits(p) for p in parts):
        return None
    position = as_position([int(p) for p in parts] if len(parts) > 1 else int(text))
    # Only the spelling this module writes counts: no second name for one position.
    return position if position is not None and _key(position) == text else None


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def record_name(position: Position) -> str:
    if type(position) is int:  # a body position: once a recorded step
        return _BODY_RECORD % position
    return f"steps/{_key(position)}"


def attempts_name(position: Position) -> str:
    return f"attempts/{_key(position)}"


def timer_name(position: Position) -> str:
    return f"timers/{_key(position)}"


def item_name(position: Position, index: int) -> str:
    """A checkpointed item of the `loop_over` block at position."""
    return f"{ITEMS}/{_key(position)}/{index:08d}"


def item_of(name: str) -> tuple[Position, int] | None:
    """(position, index) of an item record's name, None for anything else."""
    head, _, rest = name.partition("/")
    pos, _, index = rest.partition("/")
    position = _parse(pos) if head == ITEMS and index.isdigit() else None
    return None if position is None else (position, int(index))


def parse_name(name: str) -> tuple[str, Position] | None:
    """("steps" | "attempts" | "timers", position) of a record's name."""
    digits = name[6:]  # `_digits` inline: once per record of a resume
    if len(name) == 14 and name.startswith("steps/") and digits.isascii() and digits.isdigit():
        return "steps", int(digits)  # a body position's step: most names
    head, _, tail = name.partition("/")
    position = _parse(tail) if head in RECORD_KINDS else None
    return None if position is None else (head, position)


def position_of(name: str) -> Position | None:
    """The position of a step record or of a failed attempts record."""
    parsed = parse_name(name)
    return parsed[1] if parsed is not None and parsed[0] != "timers" else None


# -- the keys of a run's objects ------------------------------------------------
# <workflow>/<run id>/run             the manifest (local store)
# <workflow>/<run id>/run/<n>         its generations (object stores, see `fence`)
# <workflow>/<run id>/<record name>   steps/…, attempts/…, timers/…, items/…/…
# <workflow>/<run id>/blobs/<sha256>  large values, stored once
# <workflow>/<run id>/segments/<a>-<b> records grouped by the holder (object stores, `segments`)
# <workflow>/<run id>/lease           the local lease file (lease/<n> on object stores)
# <workflow>/<run id>/cancel          the cancel marker (create-only, see `_core.cancel`)


def run_prefix(workflow: str, run_id: str) -> str:
    return f"{workflow}/{run_id}/"


def manifest_key(workflow: str, run_id: str) -> str:
    return f"{workflow}/{run_id}/run"


def run_of(key: str) -> tuple[str, str] | None:
    """(workflow, run id) of a manifest's key, None for any other key."""
    parts = key.split("/")
    return (parts[0], parts[1]) if len(parts) == 3 and parts[2] == "run" else None


def blob_name(digest: str) -> str:
    return f"blobs/{digest}"


def lease_key(workflow: str, run_id: str) -> str:
    return f"{workflow}/{run_id}/lease"


CANCEL = "cancel"  # the cancel marker's name below a run's prefix


def cancel_key(workflow: str, run_id: str) -> str:
    return f"{workflow}/{run_id}/{CANCEL}"


def is_record(name: str) -> bool:
    """Whether a name below a run's prefix is an operation record (items included)."""
    return name.partition("/")[0] in (*RECORD_KINDS, ITEMS)


def is_run_object(name: str) -> bool:
    """Whether a name below a run's prefix is one durable writes there (a
    record, a segment, a blob, the cancel marker, the lease), as opposed to
    a file someone else put in the store's folder."""
    head = name.partition("/")[0]
    return is_record(name) or head in ("segments", "blobs", "lease") or name == CANCEL or (
        head.startswith(INCARNATION) and is_run_object(name.partition("/")[2])
    )


# A run's incarnation: a token made with its manifest (kept by a resume, new
# after a removal or restart), naming the folder its records, segments and
# blobs live in on an object store (`space`). A removed run's late write (a holder
# stalled past its lease) lands in its own incarnation's folder, which no
# reader of the run started afresh under its id looks in. A manifest without
# one (written before tokens) keeps its records at the run's prefix.
INCARNATION = "inc-"


def new_incarnation() -> str:
    return secrets.token_hex(8)


def is_incarnation(token: object) -> bool:
    return token == "" or (type(token) is str and len(token) == 16 and not token.strip("0123456789abcdef"))


def space(token: str) -> str:
    """The folder below a run's prefix holding the records (and blobs) of incarnation `token`."""
    return f"{INCARNATION}{token}/" if token else ""


def in_space(name: str, where: str) -> str | None:
    """A name below a run's prefix as a name in the folder `where`, None
    when it is a record or segment of another incarnation (or not one)."""
    head, _, tail = name.partition("/")
    if where:
        return tail if head == where[:-1] and (is_record(tail) or segment_of(tail)) else None
    return name if is_record(name) or segment_of(name) else None


def is_foreign(name: str, where: str) -> bool:
    """A record, segment or blob of another incarnation than `where`'s. Not a
    blob at the run's prefix: a run given a token before blobs moved into its
    folder keeps its blobs there (`recordlog.blob_keys`); a removal takes them."""
    head, _, tail = name.partition("/")
    folder = head.startswith(INCARNATION)
    # What is left to judge: in a folder not ours, its name there; at the prefix, once we have one.
    left = (tail if head != where[:-1] else "") if folder else where and name
    return is_record(left) or segment_of(left) is not None or (folder and left.startswith("blobs/"))


SEGMENTS = "segments/"


def segment_name(first: int, last: int) -> str:
    """A segment holding the flushes first..last (one flush, or a merge of many)."""
    return f"{SEGMENTS}{first:010d}-{last:010d}"


def segment_of(name: str) -> tuple[int, int] | None:
    """(first, last) of a segment's name below a run's prefix, None for anything else."""
    head, _, tail = name.partition("/")
    first, _, last = tail.partition("-")
    if head != SEGMENTS[:-1] or len(first) != 10 or len(last) != 10:
        return None
    if not (_digits(first) and _digits(last)) or int(first) > int(last):
        return None
    return int(first), int(last)


def is_step_record(name: str) -> bool:
    return name.startswith("steps/")


def generation_key(workflow: str, run_id: str, gen: int) -> str:
    return f"{workflow}/{run_id}/run/{gen:010d}"


def generation_of(key: str) -> tuple[str, str, int] | None:
    """(workflow, run id, generation) of a manifest generation's key."""
    parts = key.split("/")
    if len(parts) == 4 and parts[2] == "run" and parts[3].isdigit():
        return parts[0], parts[1], int(parts[3])
    return None


def call_key(digest: str) -> str:
    """A call's part of its idempotency key: its digest, cut. A token (a
    call with no digest) gives another key in each process: such a call is
    another call in each (fail closed), never answered with another's effect."""
    return digest.lstrip("!")[:16]
